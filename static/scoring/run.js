// Live progress of a scoring run: the server pushes {state, done, failed, remaining, total} over a websocket
// (static/js/live.js), from whichever process stored the verdict (the worker included: the channel layer
// crosses processes).
// Each change also redraws the verdict table and, once the run is done, the comparison with human votes
// (static/scoring/sections.js). While no push came lately and the run is unfinished, the page polls too,
// and its badge says so.
(function () {
  "use strict";
  const box = document.getElementById("progress");
  if (!box) return;
  const status = document.getElementById("live-status");
  const bar = document.getElementById("progress-bar");
  const POLL_MS = 1500;
  const finished = (state) => state === "done" || state === "failed";
  const field = (key) => box.querySelector(`[data-field="${key}"]`);
  let seen = [field("state").textContent.trim(), field("done").textContent.trim(), field("failed").textContent.trim()].join("/");

  function badge(text, ok) {
    status.textContent = text;
    status.classList.toggle("ok", ok);
  }

  function show(p) {
    for (const key of ["state", "done", "failed", "remaining", "total"]) {
      const el = field(key);
      if (el && p[key] !== undefined && p[key] !== null) el.textContent = String(p[key]);
    }
    bar.max = p.total || 1;
    bar.value = (p.done || 0) + (p.failed || 0);
    const now = [p.state, p.done, p.failed].join("/");
    if (now !== seen) {
      seen = now;
      window.auditoriumLiveSections.refresh();
    }
  }

  window.AuditoriumLive.connect(box.dataset.wsPath, {
    onMessage: (data) => {
      if (data.type === "progress") show(data.progress);
    },
    onStatus: (state) => {
      if (state === "connecting") return;
      badge(state === "live" ? "live" : box.dataset.pollUrl ? `updating every ${POLL_MS / 1000} s` : "reconnecting", state === "live");
    },
    poll: {
      url: box.dataset.pollUrl,
      everyMs: POLL_MS,
      onData: show,
      // Also while the socket is open but quiet: a push lost between processes does not stall the page.
      quietMs: 3 * POLL_MS,
      active: () => !finished(field("state").textContent.trim()),
    },
  });
})();
