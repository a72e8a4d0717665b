// Release page: while a build is queued or running, poll its status every 2 s (the badge says so) and
// move its progress bar; when a build finishes, redraw the table from the server (the download link).
(function () {
  "use strict";
  const section = document.getElementById("release-builds");
  if (!section) return;
  const badge = document.getElementById("release-status");
  const POLL_MS = 2000;
  const active = (state) => state === "pending" || state === "running";

  async function redraw() {
    const response = await fetch(window.location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    for (const id of ["release-builds", "build-release"]) {
      const old = document.getElementById(id), replacement = fresh.getElementById(id);
      if (old && replacement) old.replaceWith(document.importNode(replacement, true));
    }
  }

  async function poll() {
    let again = true;
    try {
      const response = await fetch(section.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (response.ok) {
        const { builds } = await response.json();
        let changed = false;
        for (const b of builds) {
          const row = document.querySelector(`#builds tr[data-build="${b.id}"]`);
          if (!row || row.dataset.state !== b.state) { changed = true; continue; }
          const bar = row.querySelector("progress"), stage = row.querySelector('[data-field="stage"]');
          if (bar) { bar.max = b.total || 1; bar.value = b.done; }
          if (stage) stage.textContent = (b.stage || "queued") + (b.total ? ` ${b.done}/${b.total}` : "");
        }
        again = builds.some((b) => active(b.state));
        if (changed) {
          await redraw();
          // The redrawn table can be newer than the status answer (a build that finished in between).
          again = [...document.querySelectorAll("#builds tr[data-build]")].some((row) => active(row.dataset.state));
        }
      }
    } catch (e) {
      /* try again next round */
    }
    badge.textContent = again ? `updating every ${POLL_MS / 1000} s` : "up to date";
    if (again) setTimeout(poll, POLL_MS);
  }

  if (document.getElementById("release-builds").dataset.building) setTimeout(poll, POLL_MS);
})();
