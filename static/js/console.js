/* Console enhancements; every page works without this file.
   Live Markdown preview: a textarea marked data-preview is rendered as the public page
   renders it, by the console's preview endpoint (the one Markdown function, sanitised
   on the server), a moment after typing stops. */
(function () {
  "use strict";
  var url = document.body.getAttribute("data-preview-url");
  if (!url || !window.fetch) {
    return;
  }
  function token(form) {
    var input = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }
  function attach(area) {
    var target = document.querySelector("[data-preview-for='" + area.id + "'] [data-preview-body]");
    if (!target) {
      return;
    }
    var timer = null;
    var sequence = 0;
    function render() {
      var mine = ++sequence;
      var data = new FormData();
      data.append("body", area.value);
      fetch(url, {
        method: "POST",
        body: data,
        credentials: "same-origin",
        headers: { "X-CSRFToken": token(area.form) },
      })
        .then(function (response) {
          return response.ok ? response.text() : Promise.reject(response.status);
        })
        .then(function (html) {
          // Only the latest answer counts: a slow earlier one must not overwrite it.
          if (mine === sequence) {
            target.innerHTML = html;
          }
        })
        .catch(function () {
          /* The preview is a nicety; the form still posts without it. */
        });
    }
    area.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(render, 300);
    });
    if (area.value.trim()) {
      render();
    }
  }
  var areas = document.querySelectorAll("textarea[data-preview]");
  for (var i = 0; i < areas.length; i++) {
    attach(areas[i]);
  }
})();
