/* The listening page's helpers that hold no page state: this device's copy of a pair in progress
 * and the study instructions as text (the JSON API is static/js/http.js). Loaded before
 * static/annotation/listening.js, which reads them from window.AuditoriumListen.
 */
(() => {
  "use strict";

  const STORE_PREFIX = "auditorium:assignment:";

  function uuid4() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  const store = {
    load(id) {
      try {
        return JSON.parse(localStorage.getItem(STORE_PREFIX + id)) || null;
      } catch (_) {
        return null;
      }
    },
    save(id, value) {
      try {
        localStorage.setItem(STORE_PREFIX + id, JSON.stringify(value));
      } catch (_) {
        /* private mode or full storage: the page still works, only resume is lost */
      }
    },
    clear(id) {
      try {
        localStorage.removeItem(STORE_PREFIX + id);
      } catch (_) {
        /* ignore */
      }
    },
  };

  // Study instructions are written in a text box: single line breaks are the author's wrapping,
  // blank lines separate paragraphs, and lines starting with a list marker stay lines.
  function instructionsNodes(text) {
    return text
      .replace(/\r\n?/g, "\n")
      .split(/\n\s*\n/)
      .map((block) => block.trim())
      .filter(Boolean)
      .map((block) => {
        const p = document.createElement("p");
        const lines = block.split("\n").map((line) => line.trim());
        lines.forEach((line, i) => {
          if (i > 0) p.append(/^([-*•]|\d+[.)])\s/.test(line) ? document.createElement("br") : " ");
          p.append(line);
        });
        return p;
      });
  }

  function instructionsSeenKey(study) {
    return `auditorium:instructions-seen:${study}`;
  }

  // A short fingerprint of the text: instructions the researcher rewrites open again once.
  function fingerprint(text) {
    let h = 5381;
    for (let i = 0; i < text.length; i += 1) h = ((h * 33) ^ text.charCodeAt(i)) >>> 0;
    return `${text.length}:${h.toString(36)}`;
  }

  function instructionsSeen(study, text) {
    try {
      const seen = window.localStorage.getItem(instructionsSeenKey(study));
      // "1" is what earlier versions stored, for any text.
      return seen === "1" || seen === fingerprint(text);
    } catch (_) {
      return false;
    }
  }

  function instructionsMarkSeen(study, text) {
    try {
      window.localStorage.setItem(instructionsSeenKey(study), fingerprint(text));
    } catch (_) {
      /* private mode: they open on every visit */
    }
  }

  window.AuditoriumListen = Object.assign(window.AuditoriumListen || {}, {
    instructionsMarkSeen,
    instructionsNodes,
    instructionsSeen,
    store,
    uuid4,
  });
})();
