// Live progress of a scoring run: the server pushes {state, done, failed, remaining, total} over a websocket.
// Progress written by a worker in another process reaches the websocket only through a shared
// channel layer (Redis). Without one (the demo's in-memory layer) nothing is pushed, so while the
// run is unfinished and no push came lately, the page also polls the run's JSON endpoint.
(function () {
  "use strict";
  const box = document.getElementById("progress");
  if (!box) return;
  const status = document.getElementById("live-status");
  const bar = document.getElementById("progress-bar");
  let retry = 1000;
  let lastPush = 0;
  const POLL_MS = 1500;
  const finished = (state) => state === "done" || state === "failed";
  // A page opened on a finished run already shows the comparison: no reload hint for it.
  const startedDone = box.querySelector('[data-field="state"]').textContent.trim() === "done";

  function show(p) {
    for (const key of ["state", "done", "failed", "remaining", "total"]) {
      const el = box.querySelector(`[data-field="${key}"]`);
      if (el && p[key] !== undefined && p[key] !== null) el.textContent = String(p[key]);
    }
    bar.max = p.total || 1;
    bar.value = (p.done || 0) + (p.failed || 0);
    if (p.state === "done" && !startedDone) document.getElementById("reload-hint").hidden = false;
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}${box.dataset.wsPath}`);
    socket.onopen = () => { status.textContent = "live"; status.classList.add("ok"); retry = 1000; };
    socket.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (data.type === "progress") { lastPush = Date.now(); show(data.progress); }
    };
    socket.onclose = () => {
      status.textContent = "reconnecting";
      status.classList.remove("ok");
      // Back off so a server restart is not met by a storm of reconnects.
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    };
  }
  function poll() {
    const state = box.querySelector('[data-field="state"]').textContent.trim();
    if (finished(state)) return;
    if (Date.now() - lastPush < 3 * POLL_MS) { setTimeout(poll, POLL_MS); return; }
    fetch(box.dataset.pollUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : null))
      .then((p) => { if (p) show(p); })
      .catch(() => {})
      .finally(() => setTimeout(poll, POLL_MS));
  }

  connect();
  if (box.dataset.pollUrl) setTimeout(poll, POLL_MS);
})();
