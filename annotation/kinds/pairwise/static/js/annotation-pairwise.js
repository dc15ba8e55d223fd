// A pairwise item's critical-failure entries: add one (a blank copy of the first, renamed to the next free
// index), remove one, number them. annotation-item.js keeps the clock, the draft and the submit button.
(function () {
  "use strict";
  var list = document.getElementById("pair-failures");
  var add = document.getElementById("add-pair-failure");
  if (!list || !add) return;

  function renumber() {
    list.querySelectorAll(".pair-failure").forEach(function (entry, i) {
      entry.querySelector(".failure-number").textContent = String(i + 1);
    });
  }

  function nextIndex() {
    var max = -1;
    list.querySelectorAll(".pair-failure").forEach(function (entry) {
      max = Math.max(max, parseInt(entry.dataset.index, 10));
    });
    return max + 1;
  }

  function blank(entry) {
    entry.querySelector("textarea").value = "";
    entry.querySelectorAll("input").forEach(function (input) { input.checked = false; });
    entry.classList.remove("has-error");
    entry.querySelectorAll(".field-error").forEach(function (error) { error.remove(); });
  }

  add.addEventListener("click", function () {
    var entry = list.firstElementChild.cloneNode(true);
    var index = String(nextIndex());
    entry.dataset.index = index;
    entry.id = "failure-" + index + "-anchor";
    entry.querySelectorAll("[name], [id], [for]").forEach(function (el) {
      ["name", "id", "for"].forEach(function (attr) {
        var value = el.getAttribute(attr);
        if (value) el.setAttribute(attr, value.replace(/^failure-\d+-/, "failure-" + index + "-"));
      });
    });
    blank(entry);
    list.appendChild(entry);
    renumber();
    entry.querySelector("textarea").focus();
  });

  list.addEventListener("click", function (event) {
    var remove = event.target.closest(".remove-pair-failure");
    if (!remove) return;
    var entry = remove.closest(".pair-failure");
    if (list.children.length > 1) entry.remove(); else blank(entry);
    renumber();
  });

  renumber();
})();
