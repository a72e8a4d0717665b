/* The listening page: the shared A/B transport (static/js/ab-transport.js), the CMI-Pref
 * questions, and the judgment API (annotation/api.py). No framework, no build step.
 *
 * The page reports what the transport does (play, pause, seek, switch, a tick a second
 * while playing, ended) to the listening API, numbered; the server stamps each post on
 * arrival and decides from its own record whether the clips were heard long enough.
 */
(() => {
  "use strict";

  const cfg = JSON.parse(document.getElementById("listen-config").textContent);
  const $ = (id) => document.getElementById(id);
  const { SIDES, Transport, Waveform, emptyLog, fmtTime, renderSide, transportKey, transportText } = window.AuditoriumAB;
  const TICK_MS = 100;
  const STORE_PREFIX = "auditorium:assignment:";
  const EVENT_TICK_MS = 1000; // a "still playing" event this often
  const EVENT_FLUSH_MS = 2000; // queued events are posted at least this often (state changes at once)

  function uuid4() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  async function postJSON(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(body || {}),
    });
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    return { status: response.status, ok: response.ok, data };
  }

  const store = {
    load(id) {
      try {
        return JSON.parse(localStorage.getItem(STORE_PREFIX + id)) || null;
      } catch (_) {
        return null;
      }
    },
    save(id, value) {
      try {
        localStorage.setItem(STORE_PREFIX + id, JSON.stringify(value));
      } catch (_) {
        /* private mode or full storage: the page still works, only resume is lost */
      }
    },
    clear(id) {
      try {
        localStorage.removeItem(STORE_PREFIX + id);
      } catch (_) {
        /* ignore */
      }
    },
  };

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
  };
  const sideEls = {};
  for (const side of SIDES) {
    sideEls[side] = {
      button: $(`btn-side-${side}`),
      canvas: $(`wave-${side}`),
      status: $(`wave-status-${side}`),
      heard: $(`heard-${side}`),
      meter: $(`heard-meter-${side}`),
      heardText: $(`heard-text-${side}`),
    };
    sideEls[side].wave = new Waveform(sideEls[side].canvas, side);
  }

  let ctx = null;
  let task = null; // {assignment, saved: {key, answers, log, timeMs, read}, transport, decoded}
  let submitting = false;
  let activeQuestion = "alignment";
  let lastTickWall = performance.now();
  let lastPersist = 0;

  function audioContext() {
    if (!ctx) {
      const Ctor = window.AudioContext || window.webkitAudioContext;
      ctx = new Ctor({ latencyHint: "interactive" });
    }
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

  // Study instructions are written in a text box: single line breaks are the author's wrapping,
  // blank lines separate paragraphs, and lines starting with a list marker stay lines.
  function instructionsNodes(text) {
    return text
      .replace(/\r\n?/g, "\n")
      .split(/\n\s*\n/)
      .map((block) => block.trim())
      .filter(Boolean)
      .map((block) => {
        const p = document.createElement("p");
        const lines = block.split("\n").map((line) => line.trim());
        lines.forEach((line, i) => {
          if (i > 0) p.append(/^([-*•]|\d+[.)])\s/.test(line) ? document.createElement("br") : " ");
          p.append(line);
        });
        return p;
      });
  }

  function instructionsSeenKey() {
    return `auditorium:instructions-seen:${cfg.study}`;
  }

  // A short fingerprint of the text: instructions the researcher rewrites open again once.
  function fingerprint(text) {
    let h = 5381;
    for (let i = 0; i < text.length; i += 1) h = ((h * 33) ^ text.charCodeAt(i)) >>> 0;
    return `${text.length}:${h.toString(36)}`;
  }

  function instructionsSeen(text) {
    try {
      const seen = window.localStorage.getItem(instructionsSeenKey());
      // "1" is what earlier versions stored, for any text.
      return seen === "1" || seen === fingerprint(text);
    } catch (_) {
      return false;
    }
  }

  function instructionsMarkSeen(text) {
    try {
      window.localStorage.setItem(instructionsSeenKey(), fingerprint(text));
    } catch (_) {
      /* private mode: they open on every visit */
    }
  }

  // ---- loading a pair ---------------------------------------------------------------

  async function loadNext() {
    showError("");
    teardown();
    setStage("loading");
    let res;
    try {
      res = await postJSON(cfg.nextUrl);
    } catch (_) {
      showError("The server could not be reached. Check your connection and reload the page.");
      return;
    }
    if (res.status === 403 && res.data && res.data.code === "consent_required") {
      window.location.href = cfg.consentUrl;
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

  function startTask(assignment) {
    const saved = store.load(assignment.id) || {
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
    el.instructionsBox.open = Boolean(instructions) && !instructionsSeen(instructions);
    if (instructions) instructionsMarkSeen(instructions);
    const cond = assignment.condition || {};
    el.prompt.textContent = cond.prompt || "";
    el.promptBlock.hidden = !cond.prompt;
    el.lyrics.textContent = cond.lyrics || "";
    el.lyricsBlock.hidden = !cond.lyrics;
    if (cond.reference) {
      el.ref.src = cond.reference.url;
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
    activeQuestion = "alignment";

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

  // ---- listening events -------------------------------------------------------------

  function record(mine, kind, side, position) {
    mine.saved.seq += 1;
    mine.events.push({
      seq: mine.saved.seq,
      side,
      kind,
      position: Math.round(Math.max(0, position) * 1000) / 1000,
      client_time: Math.round(performance.now()),
    });
    if (kind === "tick") {
      mine.lastTick = performance.now();
    } else if (!mine.flushQueued) {
      // Events recorded by one action (pause + switch, ended + pause) leave in one post, after the action.
      mine.flushQueued = true;
      queueMicrotask(() => {
        mine.flushQueued = false;
        flushEvents(mine);
      });
    }
  }

  function listeningUrl(mine) {
    return cfg.listeningUrl.replace("{id}", String(mine.assignment.id));
  }

  // One post at a time, in order: the server ignores numbers it has already seen, so a batch
  // that may have arrived (lost answer) is safe to send again, and an older batch never overtakes.
  function flushEvents(mine) {
    if (!mine || mine.flushing) return mine ? mine.flushing : Promise.resolve();
    if (!mine.events.length) return Promise.resolve();
    mine.flushing = (async () => {
      while (mine.events.length) {
        const batch = mine.events.slice(0, 50);
        mine.lastFlush = performance.now();
        let res;
        try {
          res = await postJSON(listeningUrl(mine), { events: batch });
        } catch (_) {
          break; // offline: kept, sent with the next flush
        }
        if (res.status >= 500 || res.status === 429) break;
        mine.events.splice(0, batch.length);
        if (res.ok && res.data) {
          mine.server = res.data.heard || mine.server;
          if (res.data.last_seq > mine.saved.seq) mine.saved.seq = res.data.last_seq;
          // Numbers the server already had from elsewhere (another tab on this pair): send those
          // events again under fresh numbers. Play/pause/switch repeated change nothing on the server.
          const skipped = batch.slice(0, res.data.ignored || 0).filter((event) => event.seq > mine.acked);
          if (skipped.length) {
            mine.events.unshift(...skipped.map((event) => ({ ...event })));
            for (const event of mine.events) {
              mine.saved.seq += 1;
              event.seq = mine.saved.seq;
            }
          }
          mine.acked = Math.max(mine.acked, res.data.last_seq);
        }
      }
      mine.flushing = null;
      if (task === mine) render();
    })();
    return mine.flushing;
  }

  function flushOnLeave() {
    if (!task || !task.events.length) return;
    try {
      fetch(listeningUrl(task), {
        method: "POST",
        credentials: "same-origin",
        keepalive: true,
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify({ events: task.events.slice(0, 50) }),
      });
    } catch (_) {
      /* the page is going away; the server's record simply ends earlier */
    }
  }

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
    if (!task) return;
    answers()[question] = side;
    for (const input of document.querySelectorAll(`input[name=${question}]`)) input.checked = input.value === side;
    activeQuestion = question;
    persist(true);
    render();
    announce(`${question === "alignment" ? "Instruction following" : "Musicality"}: ${side}.`);
  }

  function setConfidence(question, value) {
    if (!task) return;
    const v = Math.min(5, Math.max(1, value));
    answers()[`${question}_confidence`] = v;
    for (const input of document.querySelectorAll(`input[name=${question}_confidence]`)) input.checked = Number(input.value) === v;
    persist(true);
    render();
    announce(`${question === "alignment" ? "Instruction following" : "Musicality"} confidence ${v}.`);
  }

  function missing() {
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
    const a = answers();
    if (!a.alignment) items.push("Choose A or B for instruction following (Q / W).");
    if (a.alignment_confidence === null) items.push("Rate your confidence on instruction following.");
    if (!a.musicality) items.push("Choose A or B for musicality (E / R).");
    if (a.musicality_confidence === null) items.push("Rate your confidence on musicality.");
    const needed = Number(rules.rationale_min_length || 0);
    const length = (a.rationale || "").trim().length;
    if (length < needed) items.push(`Write ${needed - length} more character${needed - length === 1 ? "" : "s"} of rationale.`);
    return items;
  }

  async function submit() {
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
    // The server judges from its own record: everything the page has reported must be in it first.
    const reporting = task;
    await flushEvents(reporting);
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
    };
    render();
    const mine = task;
    let res;
    try {
      res = await postJSON(cfg.judgmentUrl.replace("{id}", String(task.assignment.id)), body);
    } catch (_) {
      submitting = false;
      showError("Your answers could not be sent (network problem). They are kept on this device; press Submit again.");
      render();
      return;
    }
    submitting = false;
    if (task !== mine) return;
    const code = res.data && res.data.code;
    if (res.status === 201 || res.status === 200 || code === "already_submitted") {
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
    } else {
      showError(detail);
    }
    render();
  }

  // ---- skip ----------------------------------------------------------------------------

  function openSkip(prefill) {
    if (!task) return;
    el.skipError.hidden = true;
    el.skipReason.value = prefill || "";
    for (const input of el.skipForm.querySelectorAll("input[name=skip_preset]")) input.checked = false;
    if (task.transport) task.transport.pause();
    el.skipDialog.showModal();
    el.skipReason.focus();
  }

  async function doSkip() {
    const preset = el.skipForm.querySelector("input[name=skip_preset]:checked");
    const reason = [preset ? preset.value : "", el.skipReason.value.trim()].filter(Boolean).join(" ");
    if (!reason) {
      el.skipError.textContent = "Say why you skip this pair: pick a reason or write one.";
      el.skipError.hidden = false;
      return;
    }
    const mine = task;
    let res;
    try {
      res = await postJSON(cfg.skipUrl.replace("{id}", String(mine.assignment.id)), { reason });
    } catch (_) {
      el.skipError.textContent = "The server could not be reached; try again.";
      el.skipError.hidden = false;
      return;
    }
    if (!res.ok) {
      el.skipError.textContent = (res.data && res.data.detail) || `Skipping failed (HTTP ${res.status}).`;
      el.skipError.hidden = false;
      return;
    }
    el.skipDialog.close();
    store.clear(mine.assignment.id);
    flash(`Pair skipped (${reason.replace(/\.$/, "")}). It goes to another annotator; your progress is unchanged.`);
    announce("Pair skipped.");
    loadNext();
  }

  // ---- rendering ------------------------------------------------------------------------

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
    const length = (answers().rationale || "").trim().length;
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
    setHTML(el.btnSubmit, submitting ? "Saving…" : 'Submit <kbd aria-hidden="true">Enter</kbd>');
    app.dataset.ready = String(todo.length === 0);
  }

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
    if (task.events.length && now - task.lastFlush >= EVENT_FLUSH_MS) flushEvents(task);
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
    const side = event.currentTarget.dataset.side;
    if (!task || !task.transport || !task.transport.ready || !task.saved.read) return;
    const rect = event.currentTarget.getBoundingClientRect();
    const fraction = (event.clientX - rect.left) / rect.width;
    const transport = task.transport;
    transport.select(side);
    transport.seek(fraction * transport.span);
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
  el.btnSubmit.addEventListener("click", submit);
  el.btnNext.addEventListener("click", loadNext);
  el.btnSkip.addEventListener("click", () => openSkip(""));
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
  el.skipForm.addEventListener("submit", (event) => {
    if (event.submitter && event.submitter.value === "skip") {
      event.preventDefault();
      doSkip();
    }
  });
  el.ref.addEventListener("play", () => task && task.transport && task.transport.pause());

  const TYPING = "textarea, input[type=text], input[type=search], input:not([type]), select, [contenteditable=true]";
  const NATIVE_ENTER = "button, a[href], summary, audio";

  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.metaKey || event.isComposing) return;
    if (el.skipDialog.open) return;
    const target = event.target;
    const stage = app.dataset.stage;
    if (target.matches && target.matches(TYPING)) {
      if (event.key === "Escape") {
        target.blur();
        event.preventDefault();
      } else if (event.key === "Enter" && event.ctrlKey && target === el.rationale) {
        event.preventDefault();
        submit();
      }
      return;
    }
    if (event.ctrlKey) return;
    if (stage === "saved") {
      if (event.key === "Enter" && !(target.matches && target.matches(NATIVE_ENTER))) {
        event.preventDefault();
        loadNext();
      }
      return;
    }
    if (stage !== "task" || !task) return;
    const transport = task.transport;
    const unlocked = task.saved.read && transport && transport.ready;
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    const digit = /^(Digit|Numpad)([1-5])$/.exec(event.code || "");
    // A held key repeats; only seeking should.
    if (event.repeat && key !== "ArrowLeft" && key !== "ArrowRight") {
      if (key === " " || key === "Enter") event.preventDefault();
      return;
    }

    if (key === "Enter") {
      if (target.matches && target.matches(NATIVE_ENTER)) return; // let buttons and links do their own thing
      event.preventDefault();
      if (!task.saved.read) confirmRead();
      else submit();
      return;
    }
    if (digit) {
      event.preventDefault();
      setConfidence(activeQuestion, Number(digit[2]) + (event.shiftKey ? 0.5 : 0));
      return;
    }
    switch (key) {
      case "q":
      case "w":
        event.preventDefault();
        setChoice("alignment", key === "q" ? "A" : "B");
        return;
      case "e":
      case "r":
        event.preventDefault();
        setChoice("musicality", key === "e" ? "A" : "B");
        return;
      default:
        break;
    }
    if (!unlocked) {
      if (key === " ") {
        event.preventDefault();
        announce("Read the instruction and press Enter to unlock the clips first.");
      }
      return;
    }
    if (key === "t") {
      event.preventDefault();
      insertTime();
      return;
    }
    transportKey(transport, event, announce);
  });

  window.addEventListener("resize", () => render());
  window.addEventListener("pagehide", () => {
    persist(true);
    flushOnLeave();
  });
  document.addEventListener("visibilitychange", () => {
    tickTime();
    persist(true);
  });

  // Read-only view of the transport for diagnostics and the browser tests.
  window.auditoriumListening = {
    snapshot() {
      const transport = task && task.transport;
      return {
        assignment: task ? task.assignment.id : null,
        stage: app.dataset.stage,
        ready: Boolean(transport && transport.ready),
        active: transport ? transport.active : null,
        playing: Boolean(transport && transport.playing),
        position: transport ? transport.position() : 0,
        audioTime: ctx ? ctx.currentTime : 0,
        loop: transport && transport.loop ? { ...transport.loop } : null,
        log: task ? JSON.parse(JSON.stringify(task.saved.log)) : null,
        server: task ? { ...task.server } : null,
        pending: task ? task.events.length + (task.flushing ? 1 : 0) : 0,
        seq: task ? task.saved.seq : 0,
      };
    },
  };

  window.setInterval(tick, TICK_MS);
  window.requestAnimationFrame(frame);
  loadNext();
})();
