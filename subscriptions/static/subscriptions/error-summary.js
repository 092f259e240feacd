/*
 * A refused form: focus goes to the error summary (its autofocus does it in most
 * browsers; this covers the rest), and each of its links moves focus to the field it
 * names, not only the view: the first input of a group of choices.
 */
(function () {
  "use strict";
  var summary = document.querySelector("[data-error-summary]");
  if (!summary) {
    return;
  }
  if (document.activeElement !== summary) {
    summary.focus();
  }
  summary.addEventListener("click", function (event) {
    var link = event.target.closest("a[href^='#']");
    var target = link && document.getElementById(link.getAttribute("href").slice(1));
    if (!target) {
      return;
    }
    var field = target.matches("input, select, textarea");
    var input = field ? target : target.querySelector("input, select, a");
    if (input) {
      event.preventDefault();
      // The label or legend in view with its field, as a person reads them together.
      var heading = field ? document.querySelector("label[for='" + target.id + "']") : target.querySelector("legend, h2");
      (heading || input).scrollIntoView();
      input.focus({ preventScroll: true });
    }
  });
})();
