// Live progress of a scoring run: the server pushes {state, done, failed, remaining, total} over a websocket.
(function () {
  "use strict";
  const box = document.getElementById("progress");
  if (!box) return;
  const status = document.getElementById("live-status");
  const bar = document.getElementById("progress-bar");
  let retry = 1000;
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
      if (data.type === "progress") show(data.progress);
    };
    socket.onclose = () => {
      status.textContent = "reconnecting";
      status.classList.remove("ok");
      // Back off so a server restart is not met by a storm of reconnects.
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    };
  }
  connect();
})();
