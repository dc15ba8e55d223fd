// Generation and disagreement pages: hovering or focusing a critical failure highlights the L1/L2 steps it links to.
(function () {
  "use strict";

  function linkedSteps(failure) {
    var steps = [];
    // Pages showing several L1/L2 pairs prefix their step ids: <section data-step-prefix="g12-">.
    var scope = failure.closest("[data-step-prefix]");
    var prefix = scope ? scope.dataset.stepPrefix : "";
    ["l1", "l2"].forEach(function (side) {
      (failure.dataset[side] || "").split(" ").forEach(function (n) {
        var step = n && document.getElementById(prefix + side + "-step-" + n);
        if (step) steps.push(step);
      });
    });
    return steps;
  }

  function setActive(failure, on) {
    failure.classList.toggle("is-active", on);
    linkedSteps(failure).forEach(function (step) {
      step.classList.toggle("is-linked", on);
    });
    // A failure chosen in the URL (?failure=..., marked is-selected) keeps its steps highlighted.
    document.querySelectorAll(".failure.is-selected").forEach(function (selected) {
      linkedSteps(selected).forEach(function (step) { step.classList.add("is-linked"); });
    });
  }

  function init() {
    document.querySelectorAll(".failure").forEach(function (failure) {
      failure.addEventListener("mouseenter", function () { setActive(failure, true); });
      failure.addEventListener("mouseleave", function () {
        if (!failure.contains(document.activeElement)) setActive(failure, false);
      });
      failure.addEventListener("focusin", function () { setActive(failure, true); });
      failure.addEventListener("focusout", function (event) {
        if (!failure.contains(event.relatedTarget)) setActive(failure, false);
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
