// An adjudicator's pair page: the two clips play through the study's A/B transport (static/js/ab-transport.js),
// fetched whole on the first Play (or A/B) press. The decision counts only when the page proves it received both
// clips (their Audio-Proof receipts go with the form), so Decide opens once each clip has played for the study's
// minimum on the audio clock (or to its end, for a shorter clip).
(function () {
  "use strict";
  const root = document.getElementById("adjudication-app");
  if (!root || !window.AuditoriumAB) return;
  const { SIDES, Transport, emptyLog, newAudioContext, playerSides, renderSide, seekToClick, transportKey, transportText } = window.AuditoriumAB;
  const $ = (id) => document.getElementById(id);
  const minListen = parseFloat(root.dataset.minListen) || 0;
  const urls = { A: root.dataset.clipA, B: root.dataset.clipB };
  const gains = { A: root.dataset.gainA, B: root.dataset.gainB };
  const submit = $("adjudication-submit");
  const hint = $("adjudication-listen-hint");
  const sideEls = playerSides();
  for (const side of SIDES) sideEls[side].status.textContent = "press Play to load";
  const buttons = { play: $("btn-play"), swap: $("btn-switch"), loop: $("btn-loop") };
  const log = emptyLog();
  let transport = null;
  let loading = null;

  const announce = (message) => { $("sr-status").textContent = message || ""; };
  const needed = (side) => Math.max(0, Math.min(minListen, (transport && transport.ready ? transport.duration(side) : Infinity) - 0.1));
  const enough = (side) => Boolean(transport && transport.ready) && log[side].seconds >= needed(side);

  function showError(text) {
    $("adjudication-error").textContent = text;
    $("adjudication-error").hidden = false;
  }

  function load() {
    if (loading) return loading;
    const ctx = newAudioContext();
    const t = new Transport(ctx, log, () => render());
    for (const side of SIDES) t.setLevel(side, gains[side]);
    transport = t;
    for (const side of SIDES) sideEls[side].status.textContent = "loading…";
    loading = Promise.all(SIDES.map(async (side) => {
      try {
        const response = await fetch(urls[side], { credentials: "same-origin" });
        if (!response.ok) throw new Error("HTTP " + response.status);
        const bytes = await response.arrayBuffer();
        // The proof of receiving the clip, taken before decoding takes the buffer.
        const receipt = window.AuditoriumProof ? window.AuditoriumProof.receipt(response, bytes, side) : null;
        const field = $("receipt-" + side);
        if (receipt && field) field.value = JSON.stringify(receipt);
        t.buffers[side] = await ctx.decodeAudioData(bytes);
        sideEls[side].status.textContent = "";
      } catch (err) {
        sideEls[side].status.textContent = "could not load";
        showError("Clip " + side + " could not be loaded (" + err.message + "). Reload the page to try again.");
      }
    })).then(() => {
      if (t.ready) for (const side of SIDES) sideEls[side].wave.setBuffer(t.buffers[side], t.span);
      render();
      return t.ready;
    });
    render();
    return loading;
  }

  async function withTransport(action) {
    if (await load()) action(transport);
  }

  function setText(node, text) {
    if (node && node.textContent !== text) node.textContent = text;
  }

  function render() {
    const ready = Boolean(transport && transport.ready);
    const position = transport ? transport.position() : 0;
    buttons.play.disabled = Boolean(loading) && !ready;
    buttons.swap.disabled = !ready;
    buttons.loop.disabled = !ready;
    const playing = Boolean(transport && transport.playing);
    const label = playing ? '<span aria-hidden="true">❚❚ </span>Pause <kbd aria-hidden="true">Space</kbd>' : '<span aria-hidden="true">▶ </span>Play <kbd aria-hidden="true">Space</kbd>';
    if (buttons.play.dataset.html !== label) { buttons.play.innerHTML = label; buttons.play.dataset.html = label; }
    for (const side of SIDES) {
      renderSide(sideEls[side], ready ? transport : null, side, position, ready || !loading);
      const s = sideEls[side];
      const goal = needed(side);
      s.heard.dataset.done = String(enough(side));
      s.meter.value = goal > 0 && isFinite(goal) ? Math.min(1, log[side].seconds / goal) : (enough(side) ? 1 : 0);
      setText(s.heardText, (enough(side) ? "✓ " : "") + log[side].seconds.toFixed(1) + " s heard");
    }
    if (ready) {
      const text = transportText(transport, position);
      setText($("time-text"), text.time);
      setText($("loop-text"), text.loop);
    }
    if (submit) {
      const open = SIDES.every(enough);
      submit.disabled = !open;
      if (hint) hint.hidden = open;
    }
  }

  for (const side of SIDES) {
    sideEls[side].button.addEventListener("click", () => withTransport((t) => t.select(side)));
    sideEls[side].canvas.addEventListener("click", (event) => { if (transport && transport.ready) seekToClick(transport, event); });
  }
  buttons.play.addEventListener("click", () => withTransport((t) => t.toggle()));
  buttons.swap.addEventListener("click", () => transport && transport.switchSide());
  buttons.loop.addEventListener("click", () => transport && announce(transport.loopKey()));

  const TYPING = "textarea, input[type=text], select, [contenteditable=true]";
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.metaKey || event.ctrlKey || event.isComposing) return;
    if (event.target.matches && event.target.matches(TYPING)) return;
    if (event.repeat && event.key !== "ArrowLeft" && event.key !== "ArrowRight") {
      if (event.key === " ") event.preventDefault();
      return;
    }
    if (!transport || !transport.ready) {
      const key = event.key.toUpperCase();
      if (key === " " || key === "A" || key === "B") {
        event.preventDefault();
        if (!loading) withTransport((t) => (key === " " ? t.toggle() : t.select(key)));
      }
      return;
    }
    transportKey(transport, event, announce);
  });

  const form = $("adjudication-form");
  if (form) {
    form.addEventListener("submit", (event) => {
      if (!SIDES.every(enough)) event.preventDefault();
      else if (transport) transport.pause();
    });
  }

  setInterval(() => {
    if (!transport) return;
    transport.checkEnded();
    transport.account();
    render();
  }, 100);
  window.addEventListener("resize", () => render());
  render();

  // Read-only view of the transport for the browser tests.
  window.auditoriumAdjudication = {
    snapshot() {
      return {
        ready: Boolean(transport && transport.ready),
        loading: Boolean(loading) && !(transport && transport.ready),
        active: transport ? transport.active : null,
        playing: Boolean(transport && transport.playing),
        log: JSON.parse(JSON.stringify(log)),
        canDecide: SIDES.every(enough),
      };
    },
  };
})();
