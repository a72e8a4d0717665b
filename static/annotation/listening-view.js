/* The listening page drawn from its state: buttons, the seconds heard per clip, the rationale count,
 * the checklist of what is still missing before Submit, and the transport's position. For
 * static/annotation/listening.js: AuditoriumListen.listeningView({...}) gives render() and missing();
 * state() returns {task, activeQuestion, submitting} as they are now.
 */
(() => {
  "use strict";

  function listeningView({ app, el, sideEls, $, SIDES, renderSide, transportText, state, passes }) {
    function missing() {
      const { task } = state();
      if (!task) return ["Wait for the pair to load."];
      const items = [];
      const rules = task.assignment.rules || {};
      const minimum = Number(rules.min_listen_seconds || 0);
      const log = task.saved.log;
      if (!task.saved.read) items.push("Read the instruction and confirm it.");
      const settled = !task.events.length && !task.flushing;
      for (const side of SIDES) {
        // Once everything is reported, the server's count is the one that decides.
        const heard = settled ? Math.min(log[side].seconds, Number(task.server[side] || 0)) : log[side].seconds;
        if (heard + 1e-6 < minimum || (minimum > 0 && log[side].plays < 1)) {
          items.push(`Listen to ${side} for ${Math.max(0.1, minimum - heard).toFixed(1)} s more.`);
        }
      }
      const a = task.saved.answers;
      // Separate screens: only the question on screen is asked for, and the rationale with the last one.
      if (passes.asks(task, "alignment")) {
        if (!a.alignment) items.push("Choose A or B for instruction following (Q / W).");
        if (a.alignment_confidence === null) items.push("Rate your confidence on instruction following.");
      }
      if (passes.asks(task, "musicality")) {
        if (!a.musicality) items.push("Choose A or B for musicality (E / R).");
        if (a.musicality_confidence === null) items.push("Rate your confidence on musicality.");
      }
      const needed = passes.last(task) ? Number(rules.rationale_min_length || 0) : 0;
      const length = (a.rationale || "").trim().length;
      if (length < needed) items.push(`Write ${needed - length} more character${needed - length === 1 ? "" : "s"} of rationale.`);
      return items;
    }

    function setText(node, text) {
      if (node.textContent !== text) node.textContent = text;
    }

    function setHTML(node, html) {
      if (node.dataset.html !== html) {
        node.innerHTML = html;
        node.dataset.html = html;
      }
    }

    function render() {
      const { task, activeQuestion, submitting } = state();
      if (!task) return;
      const transport = task.transport;
      const ready = Boolean(transport && transport.ready);
      const unlocked = task.saved.read && ready;
      const rules = task.assignment.rules || {};
      const minimum = Number(rules.min_listen_seconds || 0);
      const position = transport ? transport.position() : 0;

      el.btnPlay.disabled = !unlocked;
      el.btnSwitch.disabled = !unlocked;
      el.btnLoop.disabled = !unlocked;
      el.btnTime.disabled = !unlocked;
      const playing = Boolean(transport && transport.playing);
      setHTML(
        el.btnPlay,
        playing ? '<span aria-hidden="true">❚❚ </span>Pause <kbd aria-hidden="true">Space</kbd>' : '<span aria-hidden="true">▶ </span>Play <kbd aria-hidden="true">Space</kbd>'
      );
      if (task.saved.read) {
        el.listenNote.hidden = ready || task.failed;
        setText(el.listenNote, "Loading the clips…");
      }

      for (const side of SIDES) {
        const s = sideEls[side];
        renderSide(s, transport, side, position, unlocked);
        const heard = task.saved.log[side].seconds;
        const enough = heard + 1e-6 >= minimum && (minimum <= 0 || task.saved.log[side].plays >= 1);
        s.meter.value = minimum > 0 ? Math.min(1, heard / minimum) : 1;
        s.heard.dataset.done = String(enough);
        setText(s.heardText, minimum > 0 ? `${heard.toFixed(1)} s heard${enough ? " ✓" : ` · ${minimum.toFixed(1)} s needed`}` : `${heard.toFixed(1)} s heard`);
      }
      if (transport) {
        const text = transportText(transport, position);
        setText(el.timeText, text.time);
        setText(el.loopText, text.loop);
      }

      for (const q of ["alignment", "musicality"]) {
        $(`q-${q}`).classList.toggle("current", activeQuestion === q);
      }
      const needed = Number(rules.rationale_min_length || 0);
      const length = (task.saved.answers.rationale || "").trim().length;
      setText(el.rationaleCount, needed ? `${length} / ${needed} characters minimum` : `${length} characters (optional)`);
      el.rationaleCount.classList.toggle("ok-text", length >= needed);

      const todo = missing();
      if (el.checklist.dataset.items !== todo.join("\n")) {
        el.checklist.dataset.items = todo.join("\n");
        el.checklist.replaceChildren(
          ...todo.map((text) => {
            const li = document.createElement("li");
            li.textContent = text;
            return li;
          })
        );
      }
      el.btnSubmit.disabled = todo.length > 0 || submitting;
      setHTML(el.btnSubmit, submitting ? "Saving…" : `${passes.submitText(task)} <kbd aria-hidden="true">Enter</kbd>`);
      app.dataset.ready = String(todo.length === 0);
    }

    return { render, missing };
  }

  window.AuditoriumListen = Object.assign(window.AuditoriumListen || {}, { listeningView });
})();
