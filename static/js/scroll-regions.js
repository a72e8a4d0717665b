// Boxes that scroll sideways (wide tables on a phone) must be reachable by keyboard: a box
// whose content has nothing focusable gets tabindex=0 and a name, so arrow keys can scroll it.
(function () {
  "use strict";
  const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";

  function label(box) {
    const section = box.closest("section, .card");
    const heading = section && section.querySelector("h1, h2, h3");
    return (heading ? heading.textContent.trim() + ": " : "") + "table, scrolls sideways";
  }

  function mark() {
    for (const box of document.querySelectorAll("main *")) {
      const style = getComputedStyle(box);
      if (!/(auto|scroll)/.test(style.overflowX + style.overflowY)) continue;
      const scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
      if (!scrolls || box.hasAttribute("tabindex") || box.querySelector(FOCUSABLE)) continue;
      box.tabIndex = 0;
      if (!box.getAttribute("role")) box.setAttribute("role", "region");
      if (!box.getAttribute("aria-label") && !box.getAttribute("aria-labelledby")) box.setAttribute("aria-label", label(box));
    }
  }

  // Pages that swap a region in call this at once: the observer below marks only after a pause.
  window.AuditoriumScrollRegions = { mark };

  let timer = null;
  function later() {
    clearTimeout(timer);
    timer = setTimeout(mark, 100);
  }
  window.addEventListener("resize", later);
  document.addEventListener("DOMContentLoaded", () => {
    mark();
    new MutationObserver(later).observe(document.querySelector("main") || document.body, { childList: true, subtree: true });
  });
})();
