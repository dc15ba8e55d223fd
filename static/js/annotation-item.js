// The annotator's item page, for every study kind: dwell countdown, the unsubmitted-changes notice, a draft
// kept in this browser, and the active (tab visible) time; for critical failures the failure entries, for step
// types the expert question of each marked candidate. The server enforces every gate; this only shows them.
(function () {
  "use strict";

  var form = document.getElementById("item-form");
  if (!form) return;
  var button = document.getElementById("submit-button");
  var clock = document.getElementById("clock");
  var unsaved = document.getElementById("unsaved");
  var loadedAt = Date.now();
  var untilOpen = parseInt(form.dataset.secondsUntilOpen || "0", 10);
  var elapsedAtLoad = parseInt(form.dataset.elapsed || "0", 10);
  var activeMs = 0;
  var activeSince = document.visibilityState === "visible" ? Date.now() : null;
  var submitting = false;
  var critical = !!document.getElementById("has-failure");  // else: a step-types item

  function mmss(seconds) {
    var s = Math.max(0, Math.floor(seconds));
    var m = Math.floor(s / 60);
    s = s % 60;
    return m + ":" + (s < 10 ? "0" : "") + s;
  }

  function tick() {
    var passed = (Date.now() - loadedAt) / 1000;
    var remaining = untilOpen - passed;
    if (remaining > 0) {
      clock.textContent = mmss(Math.ceil(remaining)) + " until submission becomes open";
      button.disabled = true;
    } else {
      clock.textContent = "Time elapsed: " + mmss(elapsedAtLoad + passed);
      if (!submitting) button.disabled = false;
    }
  }

  var draftKey = "h2e-draft-" + form.dataset.assignment;

  function markChanged() {
    unsaved.hidden = false;
    saveDraft();
  }

  // A draft of what was typed, kept in this browser so a reload or a closed tab loses nothing.
  function saveDraft() {
    if (!critical) { saveChoices(); return; }
    var entries = [];
    document.querySelectorAll("#failure-entries .failure-entry").forEach(function (entry) {
      var checked = function (side) {
        return Array.prototype.map.call(
          entry.querySelectorAll("input[name$='-" + side + "']:checked"), function (box) { return box.value; });
      };
      entries.push({ d: entry.querySelector("textarea").value, l1: checked("l1"), l2: checked("l2") });
    });
    var draft = { choice: document.getElementById("has-failure").value, failures: entries,
                  comments: document.getElementById("comments").value };
    try { window.localStorage.setItem(draftKey, JSON.stringify(draft)); } catch (e) { /* storage off */ }
  }

  // Step types: the checked boxes and radios by name and value, and the comments.
  function saveChoices() {
    var checked = Array.prototype.map.call(form.querySelectorAll("input:checked"), function (input) {
      return [input.name, input.value];
    });
    var draft = { checked: checked, comments: document.getElementById("comments").value };
    try { window.localStorage.setItem(draftKey, JSON.stringify(draft)); } catch (e) { /* storage off */ }
  }

  function restoreChoices(draft) {
    (draft.checked || []).forEach(function (pair) {
      form.querySelectorAll("input[name='" + CSS.escape(pair[0]) + "']").forEach(function (input) {
        if (input.value === pair[1]) input.checked = true;
      });
    });
    document.getElementById("comments").value = draft.comments || "";
  }

  // Multiple choice: the options are checkboxes, so Tab moves between them and Space selects (the paper's
  // HIT); one at a time: checking one unchecks the others (the server refuses several).
  function keepOneChoice(chosen) {
    if (!chosen.checked) return;
    form.querySelectorAll("input.mc-choice").forEach(function (box) { if (box !== chosen) box.checked = false; });
  }

  // A candidate's expert question is asked once it is marked; unmarking it clears the answer.
  function showExpertQuestions() {
    form.querySelectorAll(".candidate").forEach(function (row) {
      var mark = row.querySelector("input[name='mark']");
      var question = row.querySelector(".candidate-expert");
      if (!mark || !question) return;
      question.hidden = !mark.checked;
      if (!mark.checked) question.querySelectorAll("input").forEach(function (radio) { radio.checked = false; });
    });
  }

  function restoreDraft() {
    var draft = null;
    try { draft = JSON.parse(window.localStorage.getItem(draftKey) || "null"); } catch (e) { draft = null; }
    if (!draft || form.dataset.posted) return;
    if (!critical) { restoreChoices(draft); unsaved.hidden = false; return; }
    document.getElementById("has-failure").value = draft.choice || "";
    document.getElementById("comments").value = draft.comments || "";
    (draft.failures || []).forEach(function (saved, i) {
      if (i > 0) addFailure();
      var entry = document.querySelectorAll("#failure-entries .failure-entry")[i];
      entry.querySelector("textarea").value = saved.d || "";
      ["l1", "l2"].forEach(function (side) {
        (saved[side] || []).forEach(function (n) {
          var box = entry.querySelector("input[name$='-" + side + "'][value='" + n + "']");
          if (box) box.checked = true;
        });
      });
    });
    unsaved.hidden = false;
  }

  function showChoice() {
    if (!critical) { showExpertQuestions(); return; }
    var choice = document.getElementById("has-failure").value;
    document.querySelectorAll(".choice-meaning").forEach(function (p) { p.hidden = p.dataset.for !== choice; });
    document.getElementById("failures-box").hidden = choice !== "yes";
  }

  function renumber() {
    if (!critical) return;
    document.querySelectorAll("#failure-entries .failure-entry").forEach(function (entry, i) {
      entry.querySelector(".failure-number").textContent = String(i + 1);
    });
  }

  function nextIndex() {
    var max = -1;
    document.querySelectorAll("#failure-entries .failure-entry").forEach(function (entry) {
      max = Math.max(max, parseInt(entry.dataset.index, 10));
    });
    return max + 1;
  }

  // A new entry is a blank copy of the first one, renamed to the next free index.
  function addFailure() {
    var list = document.getElementById("failure-entries");
    var entry = list.firstElementChild.cloneNode(true);
    var index = String(nextIndex());
    entry.dataset.index = index;
    entry.querySelectorAll("[name], [id], [for]").forEach(function (el) {
      ["name", "id", "for"].forEach(function (attr) {
        var value = el.getAttribute(attr);
        if (value) el.setAttribute(attr, value.replace(/^failure-\d+-/, "failure-" + index + "-"));
      });
    });
    entry.querySelector("textarea").value = "";
    entry.querySelectorAll("input[type=checkbox]").forEach(function (box) { box.checked = false; });
    entry.classList.remove("has-error");  // a refusal shown on the first entry is not the new one's
    entry.querySelectorAll(".field-error").forEach(function (error) { error.remove(); });
    list.appendChild(entry);
    renumber();
    list.lastElementChild.querySelector("textarea").focus();
    unsaved.hidden = false;
  }

  function removeFailure(entry) {
    var list = document.getElementById("failure-entries");
    if (list.children.length > 1) {
      entry.remove();
    } else {
      entry.querySelector("textarea").value = "";
      entry.querySelectorAll("input[type=checkbox]").forEach(function (box) { box.checked = false; });
    }
    renumber();
    markChanged();
  }

  // Phone: L1 and L2 as two tabs of one panel; the choice survives the reading fragment's htmx swaps.
  var shown = "l2";

  function showColumn(which) {
    shown = which;
    var compare = document.getElementById("compare");
    if (!compare) return;
    compare.dataset.show = which;
    document.querySelectorAll(".compare-tab").forEach(function (tab) {
      tab.setAttribute("aria-pressed", tab.dataset.show === which ? "true" : "false");
    });
  }

  function trackVisibility() {
    if (document.visibilityState === "visible") {
      activeSince = Date.now();
    } else if (activeSince !== null) {
      activeMs += Date.now() - activeSince;
      activeSince = null;
    }
  }

  form.addEventListener("input", function (event) {
    if (event.target.name !== "active_seconds") markChanged();
  });
  form.addEventListener("change", function (event) {
    if (event.target.classList && event.target.classList.contains("mc-choice")) keepOneChoice(event.target);
    if (event.target.id === "has-failure" || event.target.name === "mark") showChoice();
    markChanged();
  });
  form.addEventListener("click", function (event) {
    var remove = event.target.closest(".remove-failure");
    if (remove) removeFailure(remove.closest(".failure-entry"));
    var tab = event.target.closest(".compare-tab");
    if (tab) showColumn(tab.dataset.show);
  });
  document.body.addEventListener("htmx:afterSwap", function () {
    showColumn(shown);
    if (!critical) { restoreDraft(); showChoice(); }  // the candidates appear once every step is read
  });
  if (critical) {
    document.getElementById("add-failure").addEventListener("click", function () { addFailure(); saveDraft(); });
  }
  document.addEventListener("visibilitychange", trackVisibility);
  form.addEventListener("submit", function (event) {
    var submitter = event.submitter;
    if (submitter && submitter !== button) return; // a goal/step button posting without htmx
    var total = activeMs + (activeSince !== null ? Date.now() - activeSince : 0);
    document.getElementById("active-seconds").value = (total / 1000).toFixed(1);
    if (submitting) { event.preventDefault(); return; }
    submitting = true;
    button.disabled = true;
    unsaved.hidden = true;
    try { window.localStorage.removeItem(draftKey); } catch (e) { /* storage off */ }
  });
  window.addEventListener("beforeunload", function (event) {
    if (!unsaved.hidden && !submitting) event.preventDefault();
  });

  renumber();
  showColumn(shown);
  restoreDraft();
  showChoice();
  tick();
  window.setInterval(tick, 1000);
})();
