// Live progress of a reward-model training: the server pushes {state, stage, step, steps} over a websocket
// (static/js/live.js), from the worker process that trains. When the state changes (done, failed), the
// held-out results and any error are redrawn in place (static/scoring/sections.js).
(function () {
  "use strict";
  const box = document.getElementById("progress");
  if (!box) return;
  const status = document.getElementById("live-status");
  const bar = document.getElementById("progress-bar");
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

  window.AuditoriumLive.connect(box.dataset.wsPath, {
    onMessage: (data) => {
      if (data.type === "progress") show(data.progress);
    },
    onStatus: (state) => {
      if (state === "connecting") return;
      status.textContent = state === "live" ? "live" : state === "refused" ? "not live" : "reconnecting";
      status.classList.toggle("ok", state === "live");
    },
  });
})();
