/* Declare form enhancement; the form works without it. A product's "Locations: ..."
   summary names the ticked locations as they are ticked (the server names them after a
   submit either way). */
(function () {
  "use strict";
  function sync(details) {
    var names = [];
    var boxes = details.querySelectorAll("input[type=checkbox]");
    for (var i = 0; i < boxes.length; i++) {
      if (boxes[i].checked && boxes[i].parentNode) {
        names.push(boxes[i].parentNode.textContent.trim());
      }
    }
    var summary = details.querySelector("[data-where-summary]");
    if (summary) {
      summary.textContent = names.length ? names.join(", ") : "all";
    }
  }
  var all = document.querySelectorAll("details[data-where]");
  for (var i = 0; i < all.length; i++) {
    (function (details) {
      details.addEventListener("change", function () {
        sync(details);
      });
    })(all[i]);
  }
})();
