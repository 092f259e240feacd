/*
 * The live page (progressive enhancement; the page is complete without it).
 *
 * Every few seconds (data-interval on this script's tag), while the tab is visible, ask
 * the tiny version document (data-version-url) whether anything public changed. The
 * request revalidates with If-None-Match, so the usual answer is an empty 304. When the
 * version changes, ask for this page's live sections (data-sections-url), naming the
 * digest of each section on screen (data-live-digest): the answer holds only the
 * sections that differ (often none), and each is swapped in place: banner, incidents,
 * maintenance, product statuses and bars, grid, recent incidents, the header icon, an
 * incident's page. The whole page is never fetched again.
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
  if (!script || !window.fetch || !("content" in document.createElement("template"))) {
    return;
  }
  var versionUrl = script.getAttribute("data-version-url");
  var sectionsUrl = script.getAttribute("data-sections-url");
  var seconds = parseFloat(script.getAttribute("data-interval") || "5");
  if (!versionUrl || !sectionsUrl || !(seconds > 0)) {
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

  function fragment(markup) {
    var holder = document.createElement("template");
    holder.innerHTML = markup;
    return holder.content.firstElementChild;
  }

  function swap(sections, title) {
    var before = announceable();
    var changed = [];
    Object.keys(sections).forEach(function (name) {
      var element = document.querySelector("[data-live='" + name + "']");
      var replacement = element && fragment(sections[name]);
      if (!replacement || replacement.getAttribute("data-live") !== name) {
        return;
      }
      // Keep keyboard focus where it was when the focused element survives the swap.
      var focusedId = document.activeElement && element.contains(document.activeElement)
        ? document.activeElement.id : "";
      element.parentNode.replaceChild(document.importNode(replacement, true), element);
      if (focusedId) {
        var again = document.getElementById(focusedId);
        if (again) {
          again.focus();
        }
      }
      changed.push(name);
    });
    if (changed.length) {
      if (title) {
        document.title = title;
      }
      announceChanges(before);
      document.dispatchEvent(new CustomEvent("statuspage:live-updated", { detail: { sections: changed } }));
    }
  }

  // The digests of the sections on screen, in page order: pages that hold the same
  // sections ask the same address, which a CDN can answer for all of them.
  function held() {
    return Array.prototype.map.call(document.querySelectorAll("[data-live]"), function (element) {
      return element.getAttribute("data-live-digest") || "";
    }).filter(Boolean).join(".");
  }

  function reloadSections(version) {
    var url = sectionsUrl + "?path=" + encodeURIComponent(window.location.pathname + window.location.search) +
      "&v=" + encodeURIComponent(version) + "&have=" + encodeURIComponent(held());
    return fetch(url, { headers: { Accept: "application/json" }, credentials: "omit" })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      }).then(function (answer) {
        if (!answer || typeof answer.sections !== "object" || answer.sections === null) {
          throw new Error("unexpected answer");
        }
        swap(answer.sections, answer.title);
        if (!answer.stale) {
          // The page was served from a snapshot (the database was away): every section is
          // current now, so its notice no longer holds.
          Array.prototype.forEach.call(document.querySelectorAll(".snapshot-notice"), function (notice) {
            notice.parentNode.removeChild(notice);
          });
        }
        document.dispatchEvent(new CustomEvent("statuspage:live-checked", {
          detail: { sections: Object.keys(answer.sections) }
        }));
        // An older copy (the page was still being rebuilt) is shown, but the version is
        // not taken as seen: it is asked for again within a second.
        return !answer.stale;
      });
  }

  function tick() {
    if (busy || document.hidden) {
      return;
    }
    busy = true;
    var again = false;
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
        return reloadSections(next).then(function (fresh) {
          if (fresh) {
            known = next;
          } else {
            again = true;
          }
        });
      })
      .catch(function () {
        /* Degrade silently: the server-rendered page stays as it is. */
      })
      .then(function () {
        busy = false;
        if (again) {
          // The page was still being rebuilt: it will be ready in a moment, sooner than
          // the next tick.
          window.setTimeout(tick, Math.min(1000, intervalMs));
        }
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
  // The first answer is compared with nothing, so it asks for the sections once: a
  // change between the render and this first poll is not missed, and when there was none
  // the answer names no section.
  tick();
  start();
})();
