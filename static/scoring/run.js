// Live progress of a scoring run: the server pushes {state, done, failed, remaining, total} over a websocket,
// from whichever process stored the verdict (the worker included: the channel layer crosses processes).
// Each change also redraws the verdict table and, once the run is done, the comparison with human votes
// (static/scoring/sections.js). While no push came lately and the run is unfinished, the page polls too,
// and its badge says so.
(function () {
  "use strict";
  const box = document.getElementById("progress");
  if (!box) return;
  const status = document.getElementById("live-status");
  const bar = document.getElementById("progress-bar");
  let retry = 1000;
  let lastPush = 0;
  let socketOpen = false;
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

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}${box.dataset.wsPath}`);
    socket.onopen = () => { socketOpen = true; badge("live", true); retry = 1000; };
    socket.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (data.type === "progress") { lastPush = Date.now(); show(data.progress); }
    };
    socket.onclose = () => {
      socketOpen = false;
      badge(box.dataset.pollUrl ? `updating every ${POLL_MS / 1000} s` : "reconnecting", false);
      // Back off so a server restart is not met by a storm of reconnects.
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    };
  }
  function poll() {
    if (finished(field("state").textContent.trim())) return;
    if (socketOpen && Date.now() - lastPush < 3 * POLL_MS) { setTimeout(poll, POLL_MS); return; }
    fetch(box.dataset.pollUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : null))
      .then((p) => { if (p) show(p); })
      .catch(() => {})
      .finally(() => setTimeout(poll, POLL_MS));
  }

  connect();
  if (box.dataset.pollUrl) setTimeout(poll, POLL_MS);
})();
