// Arena page: terms, prompt, generation progress, listening events, vote, reveal.
// The page only reports what the players do, numbered (the server ignores a number it has
// seen); the server stamps each post on arrival and decides when a vote is allowed.
(function () {
  "use strict";
  const root = document.getElementById("arena");
  if (!root) return;
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
  let flushing = false;
  let tickTimer = null;
  let voted = false;
  let lastFlush = 0;
  const FLUSH_MS = 2000; // ticks are posted this often; play, pause, seek and ended at once

  function csrf() {
    const m = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  async function api(url, method, body) {
    const opts = { method: method || "GET", headers: { Accept: "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.headers["X-CSRFToken"] = csrf();
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(url, opts);
    let data = {};
    try { data = await res.json(); } catch (e) { data = {}; }
    return { ok: res.ok, status: res.status, data: data, retryAfter: res.headers.get("Retry-After") };
  }

  function errorText(r) {
    const d = r.data || {};
    if (d.code === "moderation" && d.reasons) {
      return "This prompt cannot be used: " + d.reasons.map((x) => REASONS[x] || x).join("; ") + ".";
    }
    let msg = d.error || d.detail || "Something went wrong (HTTP " + r.status + ").";
    if (typeof msg !== "string") msg = JSON.stringify(msg);
    return msg;
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
  const players = { a: $("audio-a"), b: $("audio-b") };

  function showBattle() {
    voted = false;
    $("battle").hidden = false;
    $("battle-prompt").textContent = battle.prompt;
    $("battle-kind").textContent = battle.is_instrumental ? "instrumental" : "vocal";
    $("battle-lyrics").textContent = battle.lyrics ? "Lyrics: " + battle.lyrics : "";
    $("battle-lyrics").hidden = !battle.lyrics;
    for (const side of ["a", "b"]) {
      players[side].src = battle.audio[side];
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
    updateHeard(battle.heard);
    if (!tickTimer) tickTimer = setInterval(tick, 1000);
    // The battle replaced what had focus (the Start button, now hidden): move there, not to the top.
    $("battle-title").focus();
  }

  function record(side, kind) {
    if (!battle || voted) return;
    battle.seq += 1;
    queue.push({ seq: battle.seq, side: side, kind: kind, client_time: Math.round(performance.now()), position: players[side].currentTime || 0 });
    if (kind !== "tick") flush();
  }

  // One post at a time, in order; a batch whose answer was lost is sent again as it was.
  async function flush() {
    if (flushing || !queue.length || !battle) return;
    flushing = true;
    lastFlush = performance.now();
    const mine = battle;
    const batch = queue.slice(0, 50);
    let r;
    try {
      r = await api(root.dataset.apiBattles + mine.id + "/events/", "POST", { events: batch });
    } catch (e) {
      r = null;
    }
    flushing = false;
    if (battle !== mine) return;
    if (r && r.status < 500 && r.status !== 429) queue.splice(0, batch.length);
    if (r && r.ok) {
      if (r.data.last_seq > battle.seq) battle.seq = r.data.last_seq;
      updateHeard(r.data.heard, r.data.can_vote);
      if (queue.length) flush();
    }
  }

  function tick() {
    for (const side of ["a", "b"]) {
      if (!players[side].paused && !players[side].ended) record(side, "tick");
    }
    if (queue.length && performance.now() - lastFlush >= FLUSH_MS) flush();
  }

  function updateHeard(heard, canVote) {
    if (!heard) return;
    for (const side of ["a", "b"]) {
      const v = heard[side] || 0;
      const line = $("heard-line-" + side);
      line.dataset.heard = v.toFixed(1);
      // Past the minimum the count stops being a target: "8.1 of 5 s" would read as unfinished.
      line.textContent = v >= minListen ? "✓ " + v.toFixed(1) + " s heard: enough to vote" : v.toFixed(1) + " of " + minListen + " s heard";
      line.classList.toggle("ok", v >= minListen);
      const fill = $("fill-" + side);
      fill.style.width = Math.min(100, (100 * v) / minListen) + "%";
      fill.classList.toggle("done", v >= minListen);
    }
    if (voted) return;
    const open = canVote === undefined ? heard.a >= minListen && heard.b >= minListen : canVote;
    document.querySelectorAll("button.vote").forEach((b) => { b.disabled = !open; });
    $("vote-hint").textContent = open ? "Which clip is better music for this prompt?" : "Voting opens once each clip has played for at least " + minListen + " seconds.";
  }

  for (const side of ["a", "b"]) {
    const other = side === "a" ? "b" : "a";
    const el = players[side];
    el.addEventListener("play", () => {
      // One clip at a time: comparing is easier, and listening time stays meaningful.
      if (!players[other].paused) players[other].pause();
      record(side, "play");
    });
    el.addEventListener("pause", () => { if (!el.ended) record(side, "pause"); });
    el.addEventListener("seeked", () => record(side, "seek"));
    el.addEventListener("ended", () => record(side, "ended"));
  }

  // --- vote ------------------------------------------------------------------------
  document.querySelectorAll("button.vote").forEach((button) => {
    button.addEventListener("click", async () => {
      $("vote-error").textContent = "";
      // Report what has been heard up to this moment before voting.
      for (const side of ["a", "b"]) { if (!players[side].paused) record(side, "tick"); }
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
      for (const side of ["a", "b"]) { players[side].pause(); }
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
    for (const side of ["a", "b"]) { players[side].pause(); players[side].removeAttribute("src"); players[side].load(); }
    $("battle").hidden = true;
    $("compose").hidden = false;
    $("start").disabled = false;
    $("prompt").value = "";
    $("lyrics").value = "";
    $("prompt").focus();
  });
})();
