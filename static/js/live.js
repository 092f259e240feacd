/*
 * The live page (progressive enhancement; the page is complete without it).
 *
 * Every few seconds (data-interval on this script's tag) ask the tiny version document
 * (data-version-url) whether anything public changed. The request revalidates with
 * If-None-Match, so the usual answer is an empty 304. When the version changes, fetch
 * this same page again (served from the versioned page cache) and swap each element
 * marked data-live="name" whose markup differs: banner, incidents, maintenance, product
 * statuses and bars, grid, recent incidents, the header icon, an incident's page.
 *
 * Any failure (network, HTTP error, unexpected body) leaves the page as it is and logs
 * nothing; the next tick tries again. Hidden tabs do not poll; they catch up when shown.
 */
(function () {
  "use strict";

  var script = document.currentScript;
  if (!script || !window.fetch || !window.DOMParser || !document.querySelector) {
    return;
  }
  var versionUrl = script.getAttribute("data-version-url");
  var seconds = parseFloat(script.getAttribute("data-interval") || "30");
  if (!versionUrl || !(seconds > 0)) {
    return;
  }
  var intervalMs = Math.max(500, seconds * 1000);
  var known = null;
  var busy = false;
  var timer = null;

  function announce(text) {
    var region = document.querySelector("[data-live-announce]");
    if (region && text) {
      region.textContent = text;
    }
  }

  function swap(fresh) {
    var changed = [];
    var current = document.querySelectorAll("[data-live]");
    Array.prototype.forEach.call(current, function (element) {
      var name = element.getAttribute("data-live");
      var replacement = fresh.querySelector("[data-live='" + name + "']");
      if (!replacement || replacement.outerHTML === element.outerHTML) {
        return;
      }
      // Keep keyboard focus where it was when the focused element survives the swap.
      var focusedId = document.activeElement && element.contains(document.activeElement)
        ? document.activeElement.id : "";
      var imported = document.importNode(replacement, true);
      element.parentNode.replaceChild(imported, element);
      if (focusedId) {
        var again = document.getElementById(focusedId);
        if (again) {
          again.focus();
        }
      }
      changed.push(name);
    });
    if (changed.length) {
      var title = fresh.querySelector("title");
      if (title && title.textContent) {
        document.title = title.textContent;
      }
      var banner = document.querySelector("[data-banner-description]");
      announce(banner ? banner.textContent.trim() : "");
      document.dispatchEvent(new CustomEvent("statuspage:live-updated", { detail: { sections: changed } }));
    }
  }

  function reloadSections() {
    return fetch(window.location.pathname + window.location.search, {
      headers: { Accept: "text/html" },
      credentials: "same-origin",
      cache: "no-cache"
    }).then(function (response) {
      if (!response.ok) {
        throw new Error("HTTP " + response.status);
      }
      // An older copy (the page was still being rebuilt, X-Status-Snapshot: stale) is
      // shown, but the version is not taken as seen: the next tick asks again.
      var stale = response.headers.get("X-Status-Snapshot") === "stale";
      return response.text().then(function (html) {
        return { html: html, stale: stale };
      });
    }).then(function (result) {
      swap(new DOMParser().parseFromString(result.html, "text/html"));
      return !result.stale;
    });
  }

  function tick() {
    if (busy || document.hidden) {
      return;
    }
    busy = true;
    fetch(versionUrl, { headers: { Accept: "application/json" }, credentials: "omit", cache: "no-cache" })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (doc) {
        if (!doc || typeof doc.version !== "string") {
          return null;
        }
        if (doc.version === known) {
          return null;
        }
        var next = doc.version;
        return reloadSections().then(function (fresh) {
          if (fresh) {
            known = next;
          }
        });
      })
      .catch(function () {
        /* Degrade silently: the server-rendered page stays as it is. */
      })
      .then(function () {
        busy = false;
      });
  }

  function start() {
    if (timer === null) {
      timer = window.setInterval(tick, intervalMs);
    }
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      tick();
    }
  });
  // The first answer is compared with nothing, so it re-reads the page once: a change
  // between the render and this first poll is not missed, and that re-read is normally a
  // 304 revalidation of the page just loaded.
  tick();
  start();
})();
