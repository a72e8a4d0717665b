/* The listening page: the shared A/B transport (static/js/ab-transport.js), the CMI-Pref
 * questions, and the judgment API (annotation/api.py). No framework, no build step: plain
 * scripts loaded in order before this one, each adding to window.AuditoriumListen —
 * listening-util.js (API calls, this device's copy of a pair, instructions text),
 * listening-events.js (the listening report), listening-view.js (drawing the page from
 * its state), listening-skip.js (the skip dialog) and listening-keys.js (the keyboard).
 *
 * The page records what the transport does (play, pause, seek, switch, a tick a second
 * while playing, ended), numbered and timed on its own clock, and sends it with the judgment;
 * the server places the events by its clock, decides from its own record whether the clips
 * were heard long enough, and answers with the next pair. A cycle is four requests: next
 * (the first pair only), clip A, clip B, the judgment (docs/listening.md).
 */
(() => {
  "use strict";

  const cfg = JSON.parse(document.getElementById("listen-config").textContent);
  const $ = (id) => document.getElementById(id);
  const { SIDES, Transport, elementLevel, emptyLog, fmtTime, levelElement, newAudioContext, playerSides, renderSide, seekToClick, transportKey, transportState, transportText } =
    window.AuditoriumAB;
  const TICK_MS = 100;
  const EVENT_TICK_MS = 1000; // a "still playing" event this often
  const { instructionsMarkSeen, instructionsNodes, instructionsSeen, store, uuid4 } = window.AuditoriumListen;
  const { postJSON, request } = window.AuditoriumHTTP;

  // ---- page state -------------------------------------------------------------------

  const app = $("listen-app");
  const el = {
    progressText: $("progress-text"),
    progressBar: $("progress-bar"),
    lockText: $("lock-text"),
    error: $("error-box"),
    status: $("sr-status"),
    studyInstructions: $("study-instructions"),
    prompt: $("cond-prompt"),
    promptBlock: $("cond-prompt-block"),
    lyrics: $("cond-lyrics"),
    lyricsBlock: $("cond-lyrics-block"),
    ref: $("cond-ref"),
    refBlock: $("cond-ref-block"),
    btnRead: $("btn-read"),
    readDone: $("read-done"),
    stepListen: $("step-listen"),
    listenNote: $("listen-note"),
    btnPlay: $("btn-play"),
    btnSwitch: $("btn-switch"),
    btnLoop: $("btn-loop"),
    timeText: $("time-text"),
    loopText: $("loop-text"),
    rationale: $("rationale"),
    rationaleCount: $("rationale-count"),
    btnTime: $("btn-time"),
    checklist: $("checklist"),
    btnSubmit: $("btn-submit"),
    btnSkip: $("btn-skip"),
    btnNext: $("btn-next"),
    flash: $("flash"),
    emptyTitle: $("empty-title"),
    autoNext: $("auto-next"),
    instructionsBox: $("instructions-box"),
    savedDetail: $("saved-detail"),
    emptyDetail: $("empty-detail"),
    skipDialog: $("skip-dialog"),
    skipForm: $("skip-form"),
    skipReason: $("skip-reason"),
    skipError: $("skip-error"),
    questions: $("questions"),
    rationaleBlock: $("rationale-block"),
    passStep: $("pass-step"),
  };
  const sideEls = playerSides();
  // Separate screens (static/annotation/listening-passes.js): one dimension per screen where the study asks so.
  const passes = window.AuditoriumListen.dimensionPasses({ $, el });

  let ctx = null;
  let task = null; // {assignment, saved: {key, answers, log, timeMs, read}, transport, decoded}
  let submitting = false;
  let activeQuestion = "alignment";
  let lastTickWall = performance.now();
  let lastPersist = 0;
  let followingNext = null; // the next-pair answer that came with the last judgment, for the Next button

  function audioContext() {
    if (!ctx) ctx = newAudioContext();
    return ctx;
  }

  function setStage(stage) {
    app.dataset.stage = stage;
    for (const node of app.querySelectorAll("[data-show]")) node.hidden = node.dataset.show !== stage;
    el.btnSkip.disabled = stage !== "task";
    // At the end there is no pair to skip: the button leaves the header rather than stay greyed out.
    el.btnSkip.hidden = stage === "empty";
  }

  function showError(message, action) {
    el.error.replaceChildren();
    if (!message) {
      el.error.hidden = true;
      return;
    }
    el.error.append(message);
    if (action) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "error-action";
      button.textContent = action.label;
      button.addEventListener("click", action.run);
      el.error.append(" ", button);
    }
    el.error.hidden = false;
  }

  function announce(message) {
    el.status.textContent = "";
    // A fresh text node makes screen readers repeat identical messages.
    window.setTimeout(() => {
      el.status.textContent = message;
    }, 30);
  }

  function persist(force) {
    if (!task) return;
    const now = performance.now();
    if (!force && now - lastPersist < 1000) return;
    lastPersist = now;
    store.save(task.assignment.id, task.saved);
  }

  function setProgress(progress) {
    if (!progress) return;
    const { done, target } = progress;
    el.progressBar.max = Math.max(1, target);
    el.progressBar.value = Math.min(done, target);
    el.progressText.textContent = target ? `${done} of ${target} pairs judged` : `${done} pairs judged`;
  }

  // A visible confirmation (saved, skipped) that stays until the next one or until the pair is read.
  function flash(message) {
    el.flash.textContent = message;
    el.flash.hidden = !message;
  }

  // Going straight to the next pair after a submit is this browser's choice, on unless switched off.
  const AUTO_NEXT_KEY = "auditorium:auto-next";
  try {
    el.autoNext.checked = window.localStorage.getItem(AUTO_NEXT_KEY) !== "off";
  } catch (_) {
    el.autoNext.checked = true;
  }
  el.autoNext.addEventListener("change", () => {
    try {
      window.localStorage.setItem(AUTO_NEXT_KEY, el.autoNext.checked ? "on" : "off");
    } catch (_) {
      /* private mode: the choice lasts for this page */
    }
  });

  // ---- loading a pair ---------------------------------------------------------------

  async function loadNext() {
    showError("");
    teardown();
    setStage("loading");
    const following = followingNext;
    followingNext = null;
    // The judgment's answer carried the next pair: no request of its own. An answer that refused (consent, the
    // gate) asks again, so the page shows what the next-pair endpoint says.
    if (following && "assignment" in following) {
      showNext({ status: 200, ok: true, data: following });
      return;
    }
    let res;
    try {
      res = await postJSON(cfg.nextUrl);
    } catch (_) {
      showError("The server could not be reached. Check your connection and reload the page.");
      return;
    }
    showNext(res);
  }

  function showNext(res) {
    if (res.status === 403 && res.data && res.data.code === "consent_required") {
      window.location.href = cfg.consentUrl;
      return;
    }
    // The study's questions before the study came in while the page was open: they come first.
    if (res.status === 409 && res.data && res.data.code === "questionnaire_required") {
      window.location.href = cfg.questionnaireUrl;
      return;
    }
    if (!res.ok) {
      showError((res.data && res.data.detail) || `The next pair could not be loaded (HTTP ${res.status}).`);
      return;
    }
    const assignment = res.data.assignment;
    if (!assignment) {
      const state = res.data.state || "finished";
      const titles = { closed: "This study is closed", open: "No pair is free for you right now", finished: "All done" };
      el.emptyTitle.textContent = titles[state] || titles.finished;
      el.emptyDetail.textContent = res.data.detail || "No more pairs in this study.";
      setProgress(res.data.progress);
      if (state === "closed") el.progressText.textContent += " · study closed";
      else if (state === "finished") el.progressText.textContent += " · all done";
      el.lockText.textContent = "";
      // Finishing is offered once no more pairs can come (done, or the study closed); while pairs
      // are only busy with others, the code would come too early.
      const finishRow = document.getElementById("finish-row");
      if (finishRow) finishRow.hidden = state === "open";
      setStage("empty");
      return;
    }
    startTask(assignment);
  }

  // After a reload, the listening the last page heard is on its way in that page's leaving post, which can arrive
  // after this page's next-pair answer: ask again a few times (the same reserved pair) until the server has it.
  async function catchUpHeard(mine, tries = 5) {
    for (let n = 0; n < tries; n += 1) {
      const behind = SIDES.some((side) => Number(mine.server[side] || 0) + 0.05 < mine.saved.log[side].seconds);
      if (!behind || task !== mine) return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      let res;
      try {
        res = await postJSON(cfg.nextUrl);
      } catch (_) {
        return;
      }
      const again = res.ok && res.data && res.data.assignment;
      if (!again || again.id !== mine.assignment.id || task !== mine) return;
      mine.server = (again.listening && again.listening.heard) || mine.server;
      render();
    }
  }

  function startTask(assignment) {
    const restored = store.load(assignment.id);
    const saved = restored || {
      key: uuid4(),
      answers: { alignment: null, alignment_confidence: null, musicality: null, musicality_confidence: null, rationale: "" },
      log: emptyLog(),
      timeMs: 0,
      read: false,
      servedAt: assignment.served_at,
    };
    // Event numbers continue where the server's record ends (a reload, another device).
    const listening = assignment.listening || {};
    saved.seq = Math.max(saved.seq || 0, (listening.next_seq || 1) - 1);
    if (saved.servedAt !== assignment.served_at) {
      // The pair was served again after its lock lapsed: earlier listening no longer counts
      // (the server measures listening against the new serving time), the answers stay.
      saved.log = emptyLog();
      saved.read = false;
      saved.timeMs = 0;
      saved.servedAt = assignment.served_at;
    }
    task = {
      assignment,
      saved,
      transport: null,
      decoded: 0,
      failed: false,
      events: [], // numbered, not yet accepted by the server
      acked: (listening.next_seq || 1) - 1, // the highest number the server has confirmed
      flushing: null, // the running post, if any
      lastTick: 0,
      lastFlush: performance.now(),
      server: listening.heard || { A: 0, B: 0 },
    };
    if (restored) catchUpHeard(task);
    setProgress(assignment.progress);
    const until = new Date(assignment.lock_expires_at);
    el.lockText.textContent = Number.isNaN(until.getTime())
      ? ""
      : `Reserved for you until ${until.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}`;

    // Instruction.
    el.studyInstructions.replaceChildren(...instructionsNodes(assignment.instructions || ""));
    el.instructionsBox.hidden = !assignment.instructions;
    // Open on the first visit; from then on (the next pair, a reload, another day) one tap away,
    // so the clips sit higher on small screens.
    const instructions = assignment.instructions || "";
    el.instructionsBox.open = Boolean(instructions) && !instructionsSeen(cfg.study, instructions);
    if (instructions) instructionsMarkSeen(cfg.study, instructions);
    const cond = assignment.condition || {};
    el.prompt.textContent = cond.prompt || "";
    el.promptBlock.hidden = !cond.prompt;
    el.lyrics.textContent = cond.lyrics || "";
    el.lyricsBlock.hidden = !cond.lyrics;
    if (cond.reference) {
      el.ref.src = cond.reference.url;
      levelElement(audioContext(), el.ref, cond.reference.gain_db);
      el.refBlock.hidden = false;
    } else {
      el.ref.removeAttribute("src");
      el.ref.load();
      el.refBlock.hidden = true;
    }

    // Answers restored from this device, if the page was reloaded mid-pair.
    const a = saved.answers;
    for (const q of ["alignment", "musicality"]) {
      for (const input of document.querySelectorAll(`input[name=${q}]`)) input.checked = input.value === a[q];
      for (const input of document.querySelectorAll(`input[name=${q}_confidence]`)) {
        input.checked = a[`${q}_confidence`] !== null && Number(input.value) === Number(a[`${q}_confidence`]);
      }
    }
    el.rationale.value = a.rationale || "";
    activeQuestion = passes.show(task);

    for (const side of SIDES) {
      sideEls[side].wave.setBuffer(null, 0);
      sideEls[side].status.textContent = "loading…";
    }
    setStage("task");
    setReadState(saved.read);
    decodeClips(assignment);
    render();
    if (!saved.read) el.btnRead.focus();
  }

  async function decodeClips(assignment) {
    const context = audioContext();
    const transport = new Transport(context, task.saved.log, () => render());
    transport.onPlay = () => el.ref.pause();
    // The study's loudness matching: the gain the server sent with each clip (0 when it is off).
    for (const side of SIDES) transport.setLevel(side, assignment.clips[side].gain_db);
    task.transport = transport;
    const mine = task;
    transport.onEvent = (kind, side, position) => record(mine, kind, side, position);
    await Promise.all(
      SIDES.map(async (side) => {
        const clip = assignment.clips[side];
        try {
          const response = await fetch(clip.url, { credentials: "same-origin" });
          if (!response.ok) throw new Error(`HTTP ${response.status}`);
          const bytes = await response.arrayBuffer();
          // The proof of receiving these bytes, taken before decoding takes the buffer: it leaves with the next listening post.
          const receipt = window.AuditoriumProof.receipt(response, bytes, side);
          if (receipt) prove(mine, receipt);
          const buffer = await context.decodeAudioData(bytes);
          if (task !== mine) return;
          transport.buffers[side] = buffer;
          sideEls[side].status.textContent = "";
        } catch (err) {
          if (task !== mine) return;
          mine.failed = true;
          sideEls[side].status.textContent = "could not load";
          showError(`Clip ${side} could not be loaded (${err.message}). Reload the page; if it keeps failing, skip this pair with the reason “audio does not play”.`);
        }
      })
    );
    if (task !== mine) return;
    const span = transport.span;
    for (const side of SIDES) sideEls[side].wave.setBuffer(transport.buffers[side], span);
    render();
  }

  // ---- listening events (static/annotation/listening-events.js) ---------------------

  const { record, prove, batch, settle, flushOnLeave } = window.AuditoriumListen.listeningEvents({
    url: cfg.listeningUrl,
    postJSON,
    request,
    isCurrent: (mine) => task === mine,
    render: () => render(),
  });

  // Called when a pair is finished with (stored, skipped, replaced): its local copy is not re-saved.
  function teardown() {
    if (task && task.transport) task.transport.destroy();
    task = null;
    el.lockText.textContent = "";
    if (el.ref) el.ref.pause();
  }

  function setReadState(read) {
    task.saved.read = read;
    el.btnRead.hidden = read;
    el.readDone.hidden = !read;
    el.stepListen.classList.toggle("locked", !read);
    el.listenNote.hidden = read;
  }

  function confirmRead() {
    if (!task || task.saved.read) return;
    // This click is the user gesture browsers require before audio may start.
    audioContext().resume();
    setReadState(true);
    flash("");
    // Read: folded, so the player moves up to where the reader is.
    el.instructionsBox.open = false;
    persist(true);
    render();
    announce("Instruction read. The clips are unlocked: press Space to play.");
    if (!el.btnPlay.disabled) el.btnPlay.focus();
  }

  // ---- answers and the submit rule -------------------------------------------------

  function answers() {
    return task.saved.answers;
  }

  function setChoice(question, side) {
    if (!task || !passes.asks(task, question)) return;
    answers()[question] = side;
    for (const input of document.querySelectorAll(`input[name=${question}]`)) input.checked = input.value === side;
    activeQuestion = question;
    persist(true);
    render();
    announce(`${question === "alignment" ? "Instruction following" : "Musicality"}: ${side}.`);
  }

  function setConfidence(question, value) {
    if (!task || !passes.asks(task, question)) return;
    const v = Math.min(5, Math.max(1, value));
    answers()[`${question}_confidence`] = v;
    for (const input of document.querySelectorAll(`input[name=${question}_confidence]`)) input.checked = Number(input.value) === v;
    persist(true);
    render();
    announce(`${question === "alignment" ? "Instruction following" : "Musicality"} confidence ${v}.`);
  }

  async function submit(renumbered) {
    if (!task || submitting) return;
    const todo = missing();
    if (todo.length) {
      announce(`Not yet: ${todo[0]}`);
      return;
    }
    submitting = true;
    showError("");
    const transport = task.transport;
    transport.account();
    tickTime();
    persist(true);
    render();
    // A post the queue forced may be under way: the judgment's batch starts where it ends.
    const reporting = task;
    if (reporting.flushing) await reporting.flushing;
    if (task !== reporting) {
      submitting = false;
      return;
    }
    const a = answers();
    const log = task.saved.log;
    const round3 = (x) => Math.round(x * 1000) / 1000;
    const body = {
      idempotency_key: task.saved.key,
      alignment: a.alignment,
      alignment_confidence: a.alignment_confidence,
      musicality: a.musicality,
      musicality_confidence: a.musicality_confidence,
      rationale: (a.rationale || "").trim(),
      listening_log: {
        A: { ...log.A, seconds: round3(log.A.seconds) },
        B: { ...log.B, seconds: round3(log.B.seconds) },
        switches: log.switches,
      },
      time_on_page_ms: Math.round(task.saved.timeMs),
      // The listening since the last post, and the clips' receipts: checked with the judgment, kept only with it.
      listening: batch(task),
    };
    render();
    const mine = task;
    const separate = passes.active(task);
    let res;
    try {
      const url = (separate ? cfg.answerUrl : cfg.cycleUrl).replace("{id}", String(task.assignment.id));
      res = await postJSON(url, separate ? passes.body(task, body) : body);
    } catch (_) {
      submitting = false;
      showError("Your answers could not be sent (network problem). They are kept on this device; press Submit again.");
      render();
      return;
    }
    submitting = false;
    const again = settle(mine, res);
    if (task !== mine) return;
    if (again && !renumbered) {
      submit(true);
      return;
    }
    const code = res.data && res.data.code;
    if ((res.status === 201 || res.status === 200) && res.data && res.data.complete === false) {
      nextScreen(mine, res.data);
      return;
    }
    if (res.status === 201 || res.status === 200 || code === "already_submitted") {
      followingNext = (res.data && res.data.next) || null;
      transport.pause();
      store.clear(mine.assignment.id);
      const progress = mine.assignment.progress;
      if (progress && res.status === 201) progress.done += 1;
      setProgress(progress);
      el.savedDetail.textContent =
        code === "already_submitted" ? "This pair was already judged; your first answer is kept." : "Your judgment is stored. Thank you.";
      teardown();
      if (el.autoNext.checked) {
        flash(code === "already_submitted" ? "✓ This pair was already judged; your first answer is kept." : "✓ Your judgment is saved.");
        announce("Saved.");
        loadNext();
        return;
      }
      flash("");
      setStage("saved");
      el.btnNext.focus();
      announce("Saved. Press Enter for the next pair.");
      return;
    }
    const detail = (res.data && res.data.detail) || `The judgment was not stored (HTTP ${res.status}).`;
    if (code === "lock_expired" || code === "skipped") {
      store.clear(mine.assignment.id);
      transport.pause();
      showError(detail, { label: "Take the next pair", run: loadNext });
    } else if (code === "questionnaire_required") {
      // The answers stay on this device (persist) and come back with the pair after the questions.
      transport.pause();
      showError(detail, { label: "Answer the questions", run: () => { window.location.href = cfg.questionnaireUrl; } });
    } else {
      showError(detail);
    }
    render();
  }

  // Separate screens: the first answer is stored; the same pair, clips and listening go on to the next question.
  function nextScreen(mine, answer) {
    const done = passes.title(mine.assignment.passes.current);
    activeQuestion = passes.advance(mine, answer);
    if (answer.heard) mine.server = answer.heard; // the count the first answer was accepted on
    persist(true);
    passes.show(mine);
    render();
    flash(`✓ ${done} saved. Now the next question, on the same pair.`);
    announce(`${done} saved. Next: ${passes.title(activeQuestion)}.`);
    const first = document.querySelector(`input[name=${activeQuestion}]`);
    if (first) first.focus();
  }

  // ---- skip (static/annotation/listening-skip.js) -------------------------------------

  const skip = window.AuditoriumListen.skipDialog({
    el,
    url: cfg.skipUrl,
    current: () => task,
    postJSON,
    store,
    flash,
    announce,
    loadNext,
  });

  // ---- rendering (static/annotation/listening-view.js) ----------------------------------

  const { render, missing } = window.AuditoriumListen.listeningView({
    app,
    el,
    sideEls,
    $,
    SIDES,
    renderSide,
    transportText,
    state: () => ({ task, activeQuestion, submitting }),
    passes,
  });

  function tickTime() {
    const now = performance.now();
    if (task && document.visibilityState === "visible") task.saved.timeMs += now - lastTickWall;
    lastTickWall = now;
  }

  function tick() {
    tickTime();
    if (!task || !task.transport) return;
    const transport = task.transport;
    transport.checkEnded();
    transport.account();
    const now = performance.now();
    if (transport.playing && now - task.lastTick >= EVENT_TICK_MS) record(task, "tick", transport.active, transport.position());
    persist(false);
    if (!transport.playing) render();
  }

  function frame() {
    if (task && task.transport && task.transport.playing) render();
    window.requestAnimationFrame(frame);
  }

  // ---- wiring ---------------------------------------------------------------------------

  function insertTime() {
    if (!task || !task.transport || !task.transport.ready) return;
    const transport = task.transport;
    const stamp = `[${transport.active} ${fmtTime(transport.position())}]`;
    const area = el.rationale;
    const start = area.selectionStart ?? area.value.length;
    const end = area.selectionEnd ?? area.value.length;
    const before = area.value.slice(0, start);
    const text = `${before && !/\s$/.test(before) ? " " : ""}${stamp} `;
    area.value = before + text + area.value.slice(end);
    area.focus();
    const caret = start + text.length;
    area.setSelectionRange(caret, caret);
    answers().rationale = area.value;
    persist(true);
    render();
  }

  function seekFromCanvas(event) {
    if (!task || !task.transport || !task.transport.ready || !task.saved.read) return;
    seekToClick(task.transport, event);
  }

  for (const side of SIDES) {
    sideEls[side].button.addEventListener("click", () => task && task.transport && task.transport.select(side));
    sideEls[side].canvas.addEventListener("click", seekFromCanvas);
  }
  el.btnRead.addEventListener("click", confirmRead);
  el.btnPlay.addEventListener("click", () => task && task.transport && task.transport.toggle());
  el.btnSwitch.addEventListener("click", () => task && task.transport && task.transport.switchSide());
  el.btnLoop.addEventListener("click", () => task && task.transport && announce(task.transport.loopKey()));
  el.btnTime.addEventListener("click", insertTime);
  el.btnSubmit.addEventListener("click", () => submit());
  el.btnNext.addEventListener("click", loadNext);
  el.btnSkip.addEventListener("click", () => skip.open(""));
  el.rationale.addEventListener("input", () => {
    if (!task) return;
    answers().rationale = el.rationale.value;
    persist(false);
    render();
  });
  for (const q of ["alignment", "musicality"]) {
    for (const input of document.querySelectorAll(`input[name=${q}]`)) input.addEventListener("change", () => setChoice(q, input.value));
    for (const input of document.querySelectorAll(`input[name=${q}_confidence]`)) {
      input.addEventListener("change", () => setConfidence(q, Number(input.value)));
    }
    $(`q-${q}`).addEventListener("focusin", () => {
      activeQuestion = q;
      render();
    });
  }
  el.ref.addEventListener("play", () => task && task.transport && task.transport.pause());

  window.AuditoriumListen.keyboard({
    app,
    el,
    current: () => task,
    activeQuestion: () => activeQuestion,
    confirmRead,
    submit: () => submit(),
    loadNext,
    setChoice,
    setConfidence,
    insertTime,
    announce,
    transportKey,
  });

  window.addEventListener("resize", () => render());
  window.addEventListener("pagehide", () => {
    persist(true);
    flushOnLeave(task);
  });
  document.addEventListener("visibilitychange", () => {
    tickTime();
    persist(true);
  });

  // Read-only view of the transport for diagnostics and the browser tests.
  window.auditoriumListening = {
    // What the judgment would carry now (the browser tests send it themselves to test the server's rules).
    batch() {
      return task ? batch(task) : null;
    },
    snapshot() {
      const transport = task && task.transport;
      return {
        assignment: task ? task.assignment.id : null,
        stage: app.dataset.stage,
        ...transportState(transport, ctx),
        log: task ? JSON.parse(JSON.stringify(task.saved.log)) : null,
        server: task ? { ...task.server } : null,
        pending: task ? task.events.length + (task.flushing ? 1 : 0) : 0,
        receipts: task && task.receipts ? task.receipts.length : 0,
        seq: task ? task.saved.seq : 0,
        referenceLevel: elementLevel(el.ref),
      };
    },
  };

  window.setInterval(tick, TICK_MS);
  window.requestAnimationFrame(frame);
  loadNext();
})();