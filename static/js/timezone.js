/*
 * Time zone switch (progressive enhancement). The server writes every time in the page's
 * zone and names it; that is what a visitor without JavaScript reads. With it, the footer
 * offers "your time zone": every <time datetime> with a time of day is rewritten in the
 * browser's zone (Intl), the notes naming the zone follow, and the choice is remembered
 * in localStorage (never a cookie: public pages set none and stay cacheable). Sections
 * swapped in by live.js are rewritten again.
 */
(function () {
  "use strict";

  var bar = document.querySelector("[data-tz-switch]");
  if (!bar || !window.Intl || !Intl.DateTimeFormat) {
    return;
  }
  var pageZone = bar.getAttribute("data-page-zone");
  var localZone;
  try {
    localZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch (e) {
    return;
  }
  if (!localZone) {
    return;
  }
  var KEY = "statuspage:time-zone";
  var FORMATS = {
    long: { weekday: "short", day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short" },
    short: { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short" }
  };

  function stored() {
    try {
      return window.localStorage.getItem(KEY) === "local" ? "local" : "page";
    } catch (e) {
      return "page";
    }
  }

  function remember(choice) {
    try {
      window.localStorage.setItem(KEY, choice);
    } catch (e) {
      /* Private mode: the choice lasts for this page only. */
    }
  }

  // The words around the zone come from the page, in its language (base.html).
  var noteText = bar.getAttribute("data-text-note") || "All times {zone}";
  var localText = bar.getAttribute("data-text-local") || "your time zone ({zone})";

  function apply(choice, root) {
    var times = (root || document).querySelectorAll("time[datetime][data-fmt]");
    Array.prototype.forEach.call(times, function (el) {
      var fmt = el.getAttribute("data-fmt");
      if (!FORMATS.hasOwnProperty(fmt)) {
        return; // dates without a time of day are days in the page zone
      }
      if (!el.hasAttribute("data-page-text")) {
        el.setAttribute("data-page-text", el.textContent);
      }
      if (choice === "local") {
        var when = new Date(el.getAttribute("datetime"));
        if (!isNaN(when.getTime())) {
          var options = Object.assign({ timeZone: localZone }, FORMATS[fmt]);
          el.textContent = new Intl.DateTimeFormat(document.documentElement.lang || undefined, options).format(when);
        }
      } else {
        el.textContent = el.getAttribute("data-page-text");
      }
    });
    var name = choice === "local" ? localZone : pageZone;
    Array.prototype.forEach.call(document.querySelectorAll("[data-tz-note]"), function (note) {
      note.textContent = noteText.replace("{zone}", name);
    });
    var current = document.querySelector("[data-tz-current]");
    if (current) {
      current.textContent = name;
    }
    var pageOnly = document.querySelector("[data-tz-page-only]");
    if (pageOnly) {
      pageOnly.hidden = choice === "local";
    }
    Array.prototype.forEach.call(bar.querySelectorAll("[data-tz-choice]"), function (button) {
      button.setAttribute("aria-pressed", String(button.getAttribute("data-tz-choice") === choice));
    });
  }

  var local = bar.querySelector("[data-tz-choice='local']");
  if (local) {
    local.textContent = localText.replace("{zone}", localZone);
  }
  Array.prototype.forEach.call(bar.querySelectorAll("[data-tz-choice]"), function (button) {
    button.addEventListener("click", function () {
      var choice = button.getAttribute("data-tz-choice");
      remember(choice);
      apply(choice);
    });
  });
  document.addEventListener("statuspage:live-updated", function () {
    apply(stored());
  });
  bar.hidden = false;
  if (stored() === "local") {
    apply("local");
  }
})();
