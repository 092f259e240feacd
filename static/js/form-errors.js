/*
 * After a form comes back refused, move keyboard and screen reader focus to what says why
 * (progressive enhancement; the errors are on the page either way). In order: an error
 * summary marked data-error-summary, the form-level notice (role="alert"), or the first
 * field marked aria-invalid="true", whose aria-describedby reads its error out.
 */
(function () {
  "use strict";

  var target = document.querySelector("[data-error-summary]") ||
    document.querySelector("main [role='alert']") ||
    document.querySelector("main form [aria-invalid='true']");
  if (!target) {
    return;
  }
  if (!target.matches("a[href], button, input, select, textarea, [tabindex]")) {
    target.setAttribute("tabindex", "-1");
  }
  target.focus();
})();
