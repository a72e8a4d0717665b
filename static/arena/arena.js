// Arena page: terms, prompt, generation progress, listening, vote, reveal.
// Both clips play through the listening page's A/B transport (static/js/ab-transport.js): one
// clock, a switch at the same moment, loop, waveforms, keys. The page only reports what the
// transport does, numbered (the server ignores a number it has seen); the server stamps each
// post on arrival and decides when a vote is allowed.
(function () {
  "use strict";
  const root = document.getElementById("arena");
  if (!root) return;
  const { SIDES, Transport, emptyLog, newAudioContext, playerSides, renderSide, seekToClick, transportKey, transportState, transportText } = window.AuditoriumAB;
  const STORE_PREFIX = "auditorium:arena:";
  const $ = (id) => document.getElementById(id);
  const minListen = parseFloat(root.dataset.minListen);
  const REASONS = {
    artist_reference: "it names an artist or band; describe the sound instead",
    copyrighted_material: "it asks for an existing song, cover or copyrighted lyrics",
    profanity: "it contains profanity",
    explicit: "it asks for sexual content",
  };
  let battle = null;
  let queue = [];
  // Proofs of the clips received (AuditoriumProof), sent with the next events post: only proven audio counts as heard.
  let receipts = [];
  let flushing = false;
  let flushQueued = false;
  let tickTimer = null;
  let voted = false;
  let lastFlush = 0;
  const FLUSH_MS = 2000; // ticks are posted this often; play, pause, seek, switch and ended at once

  // {ok, status, data, message, retryAfter} (static/js/http.js); data is {} when the answer had no JSON body.
  async function api(url, method, body) {
    const r = await window.AuditoriumHTTP.request(url, { method: method || "GET", body });
    return Object.assign(r, { data: r.data || {} });
  }

  function errorText(r) {
    const d = r.data || {};
    if (d.code === "moderation" && d.reasons) {
      return "This prompt cannot be used: " + d.reasons.map((x) => REASONS[x] || x).join("; ") + ".";
    }
    return r.message || "Something went wrong (HTTP " + r.status + ").";
  }

  // --- terms --------------------------------------------------------------------
  $("accept-terms").addEventListener("click", async () => {
    const r = await api(root.dataset.apiTerms, "POST", { accept: true, version: root.dataset.termsVersion });
    if (!r.ok) { $("terms-error").textContent = errorText(r); return; }
    $("terms").hidden = true;
    $("compose").hidden = false;
    $("prompt").focus();
  });

  // --- prompt -------------------------------------------------------------------
  $("random-prompt").addEventListener("click", async () => {
    const r = await api(root.dataset.apiRandom);
    if (!r.ok) { $("compose-error").textContent = errorText(r); return; }
    $("prompt").value = r.data.prompt;
    $("lyrics").value = r.data.lyrics || "";
    $("lyrics-box").open = !!r.data.lyrics;
  });

  $("start").addEventListener("click", async () => {
    $("compose-error").textContent = "";
    $("start").disabled = true;
    const r = await api(root.dataset.apiBattles, "POST", { prompt: $("prompt").value, lyrics: $("lyrics").value });
    if (!r.ok) {
      $("start").disabled = false;
      $("compose-error").textContent = errorText(r);
      return;
    }
    battle = r.data;
    $("compose").hidden = true;
    $("progress").hidden = false;
    waitReady();
  });

  async function waitReady() {
    while (battle && battle.status === "generating") {
      $("progress-text").textContent = "Generating both clips… " + battle.progress.ready + " of " + battle.progress.total + " ready";
      await new Promise((res) => setTimeout(res, 500));
      const r = await api(root.dataset.apiBattles + battle.id + "/");
      if (r.ok) battle = r.data;
    }
    $("progress").hidden = true;
    if (battle.status === "failed") {
      $("compose").hidden = false;
      $("start").disabled = false;
      $("compose-error").textContent = battle.message;
      return;
    }
    showBattle();
  }

  // --- listening -------------------------------------------------------------------
  let ctx = null;
  let transport = null;
  let lastTick = 0;
  let lastSave = 0;
  const sideEls = playerSides();
  const buttons = { play: $("btn-play"), swap: $("btn-switch"), loop: $("btn-loop") };

  function audioContext() {
    if (!ctx) ctx = newAudioContext();
    return ctx;
  }

  function announce(message) {
    $("sr-status").textContent = message || "";
  }

  // Where the listener was (clip, moment, loop), kept per battle so a reload puts them back there;
  // what counts as heard is the server's record, which a reload does not touch.
  const store = {
    load(id) {
      try { return JSON.parse(localStorage.getItem(STORE_PREFIX + id)) || null; } catch (e) { return null; }
    },
    save(id, value) {
      try { localStorage.setItem(STORE_PREFIX + id, JSON.stringify(value)); } catch (e) { /* private mode: no resume */ }
    },
    clear(id) {
      try { localStorage.removeItem(STORE_PREFIX + id); } catch (e) { /* ignore */ }
    },
  };

  function persist(force) {
    if (!battle || !transport || !transport.ready) return;
    const now = performance.now();
    if (!force && now - lastSave < 1000) return;
    lastSave = now;
    store.save(battle.id, { active: transport.active, position: transport.position(), loop: transport.loop });
  }

  function teardownPlayer() {
    if (transport) transport.destroy();
    transport = null;
    for (const side of SIDES) {
      sideEls[side].wave.setBuffer(null, 0);
      sideEls[side].status.textContent = "waiting";
    }
    render();
  }

  async function loadClips(mine) {
    teardownPlayer();
    const context = audioContext();
    const t = new Transport(context, emptyLog(), () => render());
    t.onEvent = (kind, side, position) => record(side.toLowerCase(), kind, position);
    transport = t;
    for (const side of SIDES) sideEls[side].status.textContent = "loading…";
    await Promise.all(SIDES.map(async (side) => {
      try {
        const response = await fetch(mine.audio[side.toLowerCase()], { credentials: "same-origin" });
        if (!response.ok) throw new Error("HTTP " + response.status);
        const bytes = await response.arrayBuffer();
        // Taken before decoding, which takes the buffer; it leaves with the next events post.
        const receipt = window.AuditoriumProof ? window.AuditoriumProof.receipt(response, bytes, side.toLowerCase()) : null;
        if (receipt && battle === mine) {
          receipts.push(receipt);
          queueMicrotask(flush);
        }
        const buffer = await context.decodeAudioData(bytes);
        if (transport !== t) return;
        t.buffers[side] = buffer;
        sideEls[side].status.textContent = "";
      } catch (err) {
        if (transport !== t) return;
        sideEls[side].status.textContent = "could not load";
        $("vote-error").textContent = "Clip " + side + " could not be loaded (" + err.message + "). Reload the page to try again.";
      }
    }));
    if (transport !== t || !t.ready) return;
    for (const side of SIDES) sideEls[side].wave.setBuffer(t.buffers[side], t.span);
    const saved = store.load(mine.id);
    if (saved) {
      // Put back without events: nothing was played, so the server's record has nothing to learn.
      t.active = saved.active === "B" ? "B" : "A";
      t.loop = saved.loop && saved.loop.end > saved.loop.start && saved.loop.end <= Math.min(t.duration("A"), t.duration("B")) ? saved.loop : null;
      t.offset = Math.min(Math.max(0, Number(saved.position) || 0), Math.max(0, t.duration(t.active) - 0.05));
      t._setGains(true);
    }
    render();
  }

  function showBattle() {
    voted = false;
    $("battle").hidden = false;
    $("battle-prompt").textContent = battle.prompt;
    $("battle-kind").textContent = battle.is_instrumental ? "instrumental" : "vocal";
    $("battle-lyrics").textContent = battle.lyrics ? "Lyrics: " + battle.lyrics : "";
    $("battle-lyrics").hidden = !battle.lyrics;
    for (const side of ["a", "b"]) {
      $("reveal-" + side).hidden = true;
      $("reveal-" + side).textContent = "";
    }
    document.querySelectorAll("button.vote").forEach((b) => { b.disabled = true; b.classList.remove("chosen"); });
    $("after-vote").hidden = true;
    $("feedback").value = "";
    $("feedback").disabled = false;
    $("vote-error").textContent = "";
    battle.seq = battle.listen_seq || 0;
    queue = [];
    receipts = [];
    updateHeard(battle.heard);
    loadClips(battle);
    if (!tickTimer) tickTimer = setInterval(tick, 100);
    // The battle replaced what had focus (the Start button, now hidden): move there, not to the top.
    $("battle-title").focus();
  }

  function record(side, kind, position) {
    if (!battle || voted) return;
    battle.seq += 1;
    queue.push({ seq: battle.seq, side: side, kind: kind, client_time: Math.round(performance.now()), position: Math.round(Math.max(0, position || 0) * 1000) / 1000 });
    if (kind === "tick") lastTick = performance.now();
    else if (!flushQueued) {
      // Events recorded by one action leave in one post, after the action.
      flushQueued = true;
      queueMicrotask(() => { flushQueued = false; flush(); });
    }
  }

  // One post at a time, in order; a batch whose answer was lost is sent again as it was.
  async function flush() {
    if (flushing || (!queue.length && !receipts.length) || !battle) return;
    flushing = true;
    lastFlush = performance.now();
    const mine = battle;
    const batch = queue.slice(0, 50);
    const proofs = receipts.slice(0, 8);
    let r;
    try {
      r = await api(root.dataset.apiBattles + mine.id + "/events/", "POST", { events: batch, receipts: proofs });
    } catch (e) {
      r = null;
    }
    flushing = false;
    if (battle !== mine) return;
    if (r && !r.ok && r.status < 500 && r.status !== 429 && proofs.length) {
      // A refused receipt refuses its whole post: send the events again without it (that clip then counts as unproven).
      receipts.splice(0, proofs.length);
      flush();
      return;
    }
    if (r && r.status < 500 && r.status !== 429) {
      queue.splice(0, batch.length);
      receipts.splice(0, proofs.length);
    }
    if (r && r.ok) {
      if (r.data.last_seq > battle.seq) battle.seq = r.data.last_seq;
      updateHeard(r.data.heard, r.data.can_vote);
      if (queue.length || receipts.length) flush();
    }
  }

  function tick() {
    if (!transport) return;
    transport.checkEnded();
    transport.account();
    const now = performance.now();
    if (transport.playing && now - lastTick >= 1000) record(transport.active.toLowerCase(), "tick", transport.position());
    if (queue.length && now - lastFlush >= FLUSH_MS) flush();
    persist(false);
    if (!transport.playing) render();
  }

  function frame() {
    if (transport && transport.playing) render();
    window.requestAnimationFrame(frame);
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function render() {
    const ready = Boolean(transport && transport.ready);
    const position = transport ? transport.position() : 0;
    for (const b of Object.values(buttons)) b.disabled = !ready;
    const playing = Boolean(transport && transport.playing);
    const label = playing ? '<span aria-hidden="true">❚❚ </span>Pause <kbd aria-hidden="true">Space</kbd>' : '<span aria-hidden="true">▶ </span>Play <kbd aria-hidden="true">Space</kbd>';
    if (buttons.play.dataset.html !== label) { buttons.play.innerHTML = label; buttons.play.dataset.html = label; }
    for (const side of SIDES) renderSide(sideEls[side], transport, side, position, ready);
    if (transport) {
      const text = transportText(transport, position);
      setText($("time-text"), text.time);
      setText($("loop-text"), text.loop);
    }
  }

  // What the server counted, per clip: the vote opens on its numbers, not the page's.
  function updateHeard(heard, canVote) {
    if (!heard) return;
    for (const side of SIDES) {
      const v = heard[side.toLowerCase()] || 0;
      const s = sideEls[side];
      s.heardText.dataset.heard = v.toFixed(1);
      // Past the minimum the count stops being a target: "8.1 of 5 s" would read as unfinished.
      s.heardText.textContent = v >= minListen ? "✓ " + v.toFixed(1) + " s heard: enough to vote" : v.toFixed(1) + " of " + minListen + " s heard";
      s.meter.value = minListen > 0 ? Math.min(1, v / minListen) : 1;
      s.heard.dataset.done = String(v >= minListen);
    }
    if (voted) return;
    const open = canVote === undefined ? heard.a >= minListen && heard.b >= minListen : canVote;
    document.querySelectorAll("button.vote").forEach((b) => { b.disabled = !open; });
    $("vote-hint").textContent = open ? "Which clip is better music for this prompt?" : "Voting opens once each clip has played for at least " + minListen + " seconds.";
  }

  function seekFromCanvas(event) {
    if (transport && transport.ready) seekToClick(transport, event);
  }

  for (const side of SIDES) {
    sideEls[side].button.addEventListener("click", () => transport && transport.select(side));
    sideEls[side].canvas.addEventListener("click", seekFromCanvas);
  }
  buttons.play.addEventListener("click", () => transport && transport.toggle());
  buttons.swap.addEventListener("click", () => transport && transport.switchSide());
  buttons.loop.addEventListener("click", () => transport && announce(transport.loopKey()));

  const TYPING = "textarea, input, select, [contenteditable=true]";
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.metaKey || event.ctrlKey || event.isComposing) return;
    if ($("battle").hidden || !transport || !transport.ready) return;
    if (event.target.matches && event.target.matches(TYPING)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (event.repeat && event.key !== "ArrowLeft" && event.key !== "ArrowRight") {
      if (event.key === " ") event.preventDefault();
      return;
    }
    transportKey(transport, event, announce);
  });
  window.addEventListener("resize", () => render());
  window.addEventListener("pagehide", () => persist(true));
  window.requestAnimationFrame(frame);

  // Read-only view of the transport for diagnostics and the browser tests.
  window.auditoriumArena = {
    snapshot() {
      return {
        battle: battle ? battle.id : null,
        ...transportState(transport, ctx),
        pending: queue.length + (flushing ? 1 : 0),
        seq: battle ? battle.seq : 0,
      };
    },
  };

  // --- vote ------------------------------------------------------------------------
  document.querySelectorAll("button.vote").forEach((button) => {
    button.addEventListener("click", async () => {
      $("vote-error").textContent = "";
      // Report what has been heard up to this moment before voting.
      if (transport && transport.playing) record(transport.active.toLowerCase(), "tick", transport.position());
      for (let tries = 0; (flushing || queue.length) && tries < 100; tries += 1) { await flush(); await new Promise((res) => setTimeout(res, 50)); }
      // One key per battle on this page: a retried request after a lost answer gets the stored vote back.
      if (!battle.voteKey) battle.voteKey = battle.id + "-" + Math.random().toString(36).slice(2) + Date.now().toString(36);
      const r = await api(root.dataset.apiBattles + battle.id + "/vote/", "POST", { vote: button.dataset.vote, feedback: $("feedback").value, idempotency_key: battle.voteKey });
      if (!r.ok) {
        $("vote-error").textContent = errorText(r) + (r.retryAfter ? " (retry after " + r.retryAfter + " s)" : "");
        if (r.data && r.data.heard) updateHeard(r.data.heard, false);
        return;
      }
      voted = true;
      battle = r.data;
      if (transport) transport.pause();
      store.clear(battle.id);
      document.querySelectorAll("button.vote").forEach((b) => { b.disabled = true; b.classList.toggle("chosen", b.dataset.vote === battle.vote); });
      $("feedback").disabled = true;
      reveal();
    });
  });

  function reveal() {
    for (const side of ["a", "b"]) {
      const info = battle.reveal[side];
      const box = $("reveal-" + side);
      box.innerHTML = "";
      box.appendChild(document.createTextNode("Clip " + side.toUpperCase() + ": "));
      const name = document.createElement("strong");
      name.textContent = info.system;
      box.appendChild(name);
      if (info.organisation) box.appendChild(document.createTextNode(" · " + info.organisation));
      const details = document.createElement("div");
      details.className = "muted";
      const gen = info.generation_seconds == null ? "n/a" : info.generation_seconds.toFixed(2) + " s";
      details.textContent = "Generated in " + gen + " · " + info.duration.toFixed(1) + " s of audio";
      box.appendChild(details);
      box.hidden = false;
    }
    $("vote-thanks").textContent = "Thank you! Your vote is counted.";
    $("after-vote").hidden = false;
  }

  // A reload during a battle: the server named the visitor's open battle; pick it up where it was.
  async function resume(id) {
    const r = await api(root.dataset.apiBattles + id + "/");
    if (!r.ok || !["generating", "ready"].includes(r.data.status)) {
      $("compose").hidden = false;
      return;
    }
    battle = r.data;
    $("prompt").value = battle.prompt;
    $("lyrics").value = battle.lyrics || "";
    if (battle.status === "generating") {
      $("progress").hidden = false;
      waitReady();
    } else {
      showBattle();
    }
  }
  if (root.dataset.resume) resume(root.dataset.resume);

  $("again").addEventListener("click", () => {
    battle = null;
    teardownPlayer();
    $("battle").hidden = true;
    $("compose").hidden = false;
    $("start").disabled = false;
    $("prompt").value = "";
    $("lyrics").value = "";
    $("prompt").focus();
  });
})();
