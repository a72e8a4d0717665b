// Live progress of a reward-model training: the server pushes {state, stage, step, steps} over a websocket,
// from the worker process that trains. When the state changes (done, failed), the held-out results and
// any error are redrawn in place (static/scoring/sections.js).
(function () {
  "use strict";
  const box = document.getElementById("progress");
  if (!box) return;
  const status = document.getElementById("live-status");
  const bar = document.getElementById("progress-bar");
  let retry = 1000;
  let state = box.querySelector('[data-field="state"]').textContent.trim();

  function show(p) {
    for (const key of ["state", "stage", "step", "steps"]) {
      const el = box.querySelector(`[data-field="${key}"]`);
      if (el && p[key] !== undefined && p[key] !== null) el.textContent = String(p[key]);
    }
    bar.max = p.steps || 1;
    bar.value = p.step || 0;
    if (p.state && p.state !== state) {
      state = p.state;
      window.auditoriumLiveSections.refresh();
    }
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}${box.dataset.wsPath}`);
    socket.onopen = () => { status.textContent = "live"; status.classList.add("ok"); retry = 1000; };
    socket.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (data.type === "progress") show(data.progress);
    };
    socket.onclose = () => {
      status.textContent = "reconnecting";
      status.classList.remove("ok");
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    };
  }
  connect();
})();
