/*
 * Progressive enhancement for the status pages: every minute, read the Statuspage-format
 * summary (/api/v2/summary.json) and refresh the banner and the product statuses in place.
 * The page is complete without this script; any failure (network, HTTP error, unexpected
 * JSON) leaves the server-rendered page as it is and says nothing.
 */
(function () {
  "use strict";

  var SUMMARY_URL = "/api/v2/summary.json";
  var INTERVAL_MS = 60 * 1000;
  var LEVEL_LABELS = {
    operational: "Operational",
    under_maintenance: "Under maintenance",
    degraded_performance: "Degraded performance",
    partial_outage: "Partial outage",
    major_outage: "Major outage"
  };
  var INDICATOR_LEVEL = {
    none: "operational",
    maintenance: "under_maintenance",
    minor: "degraded_performance",
    major: "partial_outage",
    critical: "major_outage"
  };
  var SVG_NS = "http://www.w3.org/2000/svg";

  if (!window.fetch || !document.querySelector) {
    return;
  }

  function icon(level, size) {
    var svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("class", "icon icon--" + level);
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    svg.setAttribute("width", String(size));
    svg.setAttribute("height", String(size));
    var use = document.createElementNS(SVG_NS, "use");
    use.setAttribute("href", "#icon-" + level);
    svg.appendChild(use);
    return svg;
  }

  function statusElement(level) {
    var wrapper = document.createElement("span");
    wrapper.className = "status status--" + level;
    wrapper.setAttribute("data-status", level);
    wrapper.appendChild(icon(level, 20));
    var text = document.createElement("span");
    text.className = "status__text";
    text.textContent = LEVEL_LABELS[level];
    wrapper.appendChild(text);
    return wrapper;
  }

  function updateBanner(status) {
    var banner = document.querySelector("[data-refresh='banner']");
    if (!banner || !status || !INDICATOR_LEVEL.hasOwnProperty(status.indicator)) {
      return;
    }
    var level = INDICATOR_LEVEL[status.indicator];
    banner.className = "banner banner--" + status.indicator;
    var title = banner.querySelector("[data-banner-description]");
    if (title && typeof status.description === "string" && title.textContent !== status.description) {
      title.textContent = status.description;
    }
    var oldIcon = banner.querySelector("[data-banner-icon]");
    if (oldIcon && oldIcon.getAttribute("class").indexOf("icon--" + level) === -1) {
      var fresh = icon(level, 40);
      fresh.setAttribute("class", "banner__icon icon--" + level);
      fresh.setAttribute("data-banner-icon", "");
      oldIcon.parentNode.replaceChild(fresh, oldIcon);
    }
  }

  function updateComponents(components) {
    if (!Array.isArray(components)) {
      return;
    }
    var byId = {};
    var byName = {};
    components.forEach(function (c) {
      if (c && !c.group && LEVEL_LABELS.hasOwnProperty(c.status)) {
        byId[c.id] = c;
        byName[c.name] = c;
      }
    });
    var rows = document.querySelectorAll("[data-component-id]");
    Array.prototype.forEach.call(rows, function (row) {
      var c = byId[row.getAttribute("data-component-id")] || byName[row.getAttribute("data-component-name")];
      var holder = row.querySelector("[data-component-status]");
      if (!c || !holder) {
        return;
      }
      var current = holder.querySelector("[data-status]");
      if (current && current.getAttribute("data-status") === c.status) {
        return;
      }
      while (holder.firstChild) {
        holder.removeChild(holder.firstChild);
      }
      holder.appendChild(statusElement(c.status));
    });
  }

  function noteRefreshed() {
    var note = document.querySelector("[data-refresh-note]");
    if (!note) {
      return;
    }
    var now = new Date();
    var hh = String(now.getHours()).padStart(2, "0");
    var mm = String(now.getMinutes()).padStart(2, "0");
    note.textContent = "· statuses refreshed at " + hh + ":" + mm + " (your time)";
    note.hidden = false;
  }

  function refresh() {
    if (document.hidden) {
      return;
    }
    fetch(SUMMARY_URL, { headers: { Accept: "application/json" }, credentials: "omit" })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (summary) {
        if (!summary || typeof summary !== "object") {
          return;
        }
        updateBanner(summary.status);
        updateComponents(summary.components);
        noteRefreshed();
      })
      .catch(function () {
        /* Degrade silently: the server-rendered page stays as it is. */
      });
  }

  window.setInterval(refresh, INTERVAL_MS);
})();
