/*
 * Our embeddable status snippet, for other sites. Paste:
 *
 *   <a data-status-embed href="https://status.example.com/">
 *     <img src="https://status.example.com/badge.svg" alt="Current status" height="20">
 *   </a>
 *   <script src="https://status.example.com/static/js/status-embed.js" async></script>
 *
 * Without JavaScript (or if our API cannot be reached) the link and its SVG badge stay.
 * With it, each [data-status-embed] link shows a coloured dot and the overall status
 * read from /api/v2/status.json (CORS, no cookies), refreshed every minute.
 *
 * Written for a strict Content-Security-Policy on the embedding page: no inline script,
 * no eval, no innerHTML, no style attributes or <style> elements (colours are set
 * through the CSSOM, which style-src does not govern). The page needs only our origin
 * in script-src, connect-src and (for the fallback badge) img-src.
 */
(function () {
  "use strict";

  var script = document.currentScript;
  if (!script || !window.fetch || !document.querySelectorAll) {
    return;
  }
  var origin;
  try {
    origin = new URL(script.src, document.baseURI).origin;
  } catch (e) {
    return;
  }
  var COLOURS = {
    none: "#188038",
    maintenance: "#1558b0",
    minor: "#a86b00",
    major: "#c25400",
    critical: "#c5221f"
  };
  var INTERVAL_MS = 60 * 1000;

  function render(holder, status) {
    var dot = document.createElement("span");
    dot.setAttribute("aria-hidden", "true");
    dot.style.display = "inline-block";
    dot.style.width = "0.7em";
    dot.style.height = "0.7em";
    dot.style.marginRight = "0.4em";
    dot.style.borderRadius = "50%";
    dot.style.verticalAlign = "baseline";
    dot.style.backgroundColor = COLOURS[status.indicator];
    var text = document.createElement("span");
    text.setAttribute("data-status-embed-text", "");
    text.textContent = status.description;
    while (holder.firstChild) {
      holder.removeChild(holder.firstChild);
    }
    holder.appendChild(dot);
    holder.appendChild(text);
    holder.setAttribute("data-status-indicator", status.indicator);
  }

  function refresh() {
    var holders = document.querySelectorAll("[data-status-embed]");
    if (!holders.length) {
      return;
    }
    fetch(origin + "/api/v2/status.json", { mode: "cors", credentials: "omit" })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (body) {
        var status = body && body.status;
        if (!status || !COLOURS.hasOwnProperty(status.indicator) || typeof status.description !== "string") {
          return;
        }
        Array.prototype.forEach.call(holders, function (holder) {
          render(holder, status);
        });
      })
      .catch(function () {
        /* Keep the fallback badge: it is the same information, as an image. */
      });
  }

  refresh();
  window.setInterval(refresh, INTERVAL_MS);
})();
