// Re-renders the parts of a live page that the server draws (verdict tables, held-out results):
// fetches the page itself and swaps each [data-live-section] element for its fresh copy.
// Calls while a fetch is under way or within MIN_GAP_MS of the last are folded into one trailing fetch.
(function () {
  "use strict";
  const MIN_GAP_MS = 1000;
  let busy = false, again = false, last = 0, timer = null;

  async function fetchAndSwap() {
    busy = true;
    last = Date.now();
    try {
      const response = await fetch(window.location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" });
      if (!response.ok) return;
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      document.querySelectorAll("[data-live-section]").forEach((old) => {
        const replacement = fresh.getElementById(old.id);
        if (replacement) old.replaceWith(document.importNode(replacement, true));
      });
    } catch (e) {
      /* the next push tries again */
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }

  function refresh() {
    if (busy) { again = true; return; }
    if (timer) return;
    const wait = Math.max(0, last + MIN_GAP_MS - Date.now());
    timer = setTimeout(() => { timer = null; fetchAndSwap(); }, wait);
  }

  window.auditoriumLiveSections = { refresh };
})();
