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
 *
 * Screen readers hear changes only: each element marked data-announce="key" (the overall
 * status, a product's status, an incident card, one update of an incident) is read as
 * text before and after a swap, and only keys whose text is new or different are spoken,
 * once, through the page's role="status" region. A re-read that merely moves the clock
 * (the "last updated" time, a running duration) says nothing. The text of a key is that
 * of its [data-announce-text] parts when it has some (never a <time>, so the visitor's
 * time zone choice cannot look like a change), else its own text.
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

  // Parts and changes are read as sentences: a pause between a title and its status.
  function sentences(texts) {
    return texts.filter(Boolean).map(function (text) {
      return /[.!?…:;]$/.test(text) ? text : text + ".";
    }).join(" ");
  }

  function spoken(element) {
    var parts = element.querySelectorAll("[data-announce-text]");
    var texts = parts.length ? Array.prototype.map.call(parts, function (part) {
      return part.textContent;
    }) : [element.textContent];
    return sentences(texts.map(function (text) {
      return text.replace(/\s+/g, " ").trim();
    }));
  }

  function announceable() {
    var said = {};
    var order = [];
    Array.prototype.forEach.call(document.querySelectorAll("[data-announce]"), function (element) {
      var key = element.getAttribute("data-announce");
      if (!Object.prototype.hasOwnProperty.call(said, key)) {
        said[key] = spoken(element);
        order.push(key);
      }
    });
    return { said: said, order: order };
  }

  function announceChanges(before) {
    var after = announceable();
    var news = after.order.filter(function (key) {
      return after.said[key] && after.said[key] !== before.said[key];
    }).map(function (key) {
      return after.said[key];
    });
    var region = document.querySelector("[data-live-announce]");
    if (!region || !news.length) {
      return;
    }
    // Emptied first, so that the same words said again (back to "operational") are
    // still a change the screen reader reports.
    region.textContent = "";
    window.setTimeout(function () {
      region.textContent = news.join(" ");
    }, 100);
  }

  function swap(fresh) {
    var before = announceable();
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
      announceChanges(before);
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
