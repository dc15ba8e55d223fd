// The adjudication page's gold form: the failures box shows with "Critical failure(s)"; entries are added and removed.
(function () {
  "use strict";

  function nextIndex(list) {
    var max = -1;
    list.querySelectorAll(".failure-entry").forEach(function (entry) { max = Math.max(max, Number(entry.dataset.index)); });
    return max + 1;
  }

  function renumber(list) {
    list.querySelectorAll(".failure-number").forEach(function (n, i) { n.textContent = String(i + 1); });
  }

  function clear(entry) {
    entry.querySelector("textarea").value = "";
    entry.querySelectorAll("input[type=checkbox]").forEach(function (box) { box.checked = false; });
    entry.classList.remove("has-error");
    entry.querySelectorAll(".field-error").forEach(function (error) { error.remove(); });
  }

  function addFailure(list) {
    var entry = list.lastElementChild.cloneNode(true);
    var index = String(nextIndex(list));
    entry.dataset.index = index;
    entry.querySelectorAll("[name], [id], [for]").forEach(function (el) {
      ["name", "id", "for"].forEach(function (attr) {
        var value = el.getAttribute(attr);
        if (value) el.setAttribute(attr, value.replace(/^failure-\d+-/, "failure-" + index + "-"));
      });
    });
    clear(entry);
    list.appendChild(entry);
    renumber(list);
    entry.querySelector("textarea").focus();
  }

  function init() {
    var select = document.getElementById("has-failure");
    var box = document.getElementById("failures-box");
    var list = document.getElementById("failure-entries");
    if (!select || !box || !list) return;
    select.addEventListener("change", function () { box.hidden = select.value !== "yes"; });
    document.getElementById("add-failure").addEventListener("click", function () { addFailure(list); });
    list.addEventListener("click", function (event) {
      var button = event.target.closest(".remove-failure");
      if (!button) return;
      var entry = button.closest(".failure-entry");
      if (list.children.length > 1) entry.remove(); else clear(entry);
      renumber(list);
    });
    renumber(list);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
