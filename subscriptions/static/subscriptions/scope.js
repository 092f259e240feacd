/*
 * Ticking a product means "only the products I choose": select that scope, so the form
 * shows what it will do. Without this script the server refuses the contradiction and
 * says so next to the choice.
 */
(function () {
  "use strict";
  var some = document.querySelector("[data-scope] input[type=radio][value=some]");
  if (!some) {
    return;
  }
  var boxes = document.querySelectorAll("[data-scope-product] input[type=checkbox]");
  Array.prototype.forEach.call(boxes, function (box) {
    box.addEventListener("change", function () {
      if (box.checked) {
        some.checked = true;
      }
    });
  });
})();
