/* The A/B transport shared by the listening page (annotation) and the arena's battle page:
 * two clips decoded in full on the Web Audio API, run from one clock through two gain nodes,
 * so switching A/B is a short crossfade at exactly the same position instead of a seek that
 * can stall; a loop, waveforms drawn to one time scale, and the keys that drive them.
 * Each clip also passes a level node of its own: the loudness-matching gain the server sends
 * with the clip (annotation.models.Study.clip_gain_db), applied by `applyGain` and nowhere else.
 *
 * The pages own everything else (what to report to the server, what to draw around it); they
 * reach this through window.AuditoriumAB. No framework, no build step.
 */
(() => {
  "use strict";

  const SIDES = ["A", "B"];
  const CROSSFADE_S = 0.008; // long enough to avoid a click, short enough to compare timbre
  const MIN_LOOP_S = 0.5;
  const SEEK_STEP = 2;
  const SEEK_STEP_BIG = 10;

  function fmtTime(seconds, tenths) {
    const s = Math.max(0, seconds);
    const m = Math.floor(s / 60);
    const rest = s - m * 60;
    const whole = Math.floor(rest);
    const base = `${m}:${String(whole).padStart(2, "0")}`;
    return tenths ? `${base}.${Math.floor((rest - whole) * 10)}` : base;
  }

  function emptyLog() {
    return {
      A: { plays: 0, seconds: 0, seeks: 0, loops: 0 },
      B: { plays: 0, seconds: 0, seeks: 0, loops: 0 },
      switches: 0,
    };
  }

  // ---- loudness matching --------------------------------------------------------------

  // The one place a clip's gain in dB becomes a GainNode's value (10^(dB/20)); anything that is
  // not a number plays the clip as stored. Returns the dB applied.
  function applyGain(node, db) {
    const value = Number(db);
    const applied = Number.isFinite(value) ? value : 0;
    node.gain.value = Math.pow(10, applied / 20);
    return applied;
  }

  function levelOf(node, db) {
    return { db, value: node.gain.value };
  }

  // A reference player (<audio>) levelled like the clips: its sound is taken through a GainNode of the
  // page's context. A player left at 0 dB is never rerouted, so it plays exactly as before.
  const elementLevels = new WeakMap();

  function levelElement(ctx, element, db) {
    let entry = elementLevels.get(element);
    if (!entry) {
      if (!(Number(db) || 0)) return;
      const source = ctx.createMediaElementSource(element);
      const node = ctx.createGain();
      source.connect(node);
      node.connect(ctx.destination);
      // Until the context runs the player would be silent; its own Play press may start it.
      element.addEventListener("play", () => {
        if (ctx.state !== "running") ctx.resume();
      });
      entry = { node, db: 0 };
      elementLevels.set(element, entry);
    }
    entry.db = applyGain(entry.node, db);
  }

  function elementLevel(element) {
    const entry = element ? elementLevels.get(element) : null;
    return entry ? levelOf(entry.node, entry.db) : null;
  }

  // ---- the transport ------------------------------------------------------------------

  class Transport {
    constructor(ctx, log, onChange) {
      this.ctx = ctx;
      this.log = log;
      this.onChange = onChange;
      this.buffers = { A: null, B: null };
      this.gains = {};
      this.levels = {}; // per clip: {node, db}, made on first use (a page may widen the labels first)
      for (const side of SIDES) {
        const gain = ctx.createGain();
        gain.gain.value = side === "A" ? 1 : 0;
        gain.connect(ctx.destination);
        this.gains[side] = gain;
      }
      this.active = "A";
      // The clips the transport switches between; the rating page widens it to an item's letters.
      this.labels = SIDES;
      this.playing = false;
      this.sources = {};
      this.offset = 0; // clip position at startedAt
      this.startedAt = 0; // ctx time when the current sources began
      this.lastAccount = 0;
      this.loop = null; // {start, end}
      this.loopStartPending = null;
      this.wraps = 0;
      this.onEvent = null; // (kind, side, position) for the listening API
    }

    // Between a clip's source and its switching gain, so the crossfade still ramps 0..1 and the level
    // holds through switches, loops and seeks.
    _level(side) {
      if (!this.levels[side]) {
        const node = this.ctx.createGain();
        node.connect(this.gains[side]);
        this.levels[side] = { node, db: applyGain(node, 0) };
      }
      return this.levels[side];
    }

    setLevel(side, db) {
      const level = this._level(side);
      level.db = applyGain(level.node, db);
    }

    levelState() {
      const out = {};
      for (const [side, level] of Object.entries(this.levels)) out[side] = levelOf(level.node, level.db);
      return out;
    }

    _emit(kind) {
      if (this.onEvent) this.onEvent(kind, this.active, this.position());
    }

    get ready() {
      return Boolean(this.buffers.A && this.buffers.B);
    }

    duration(side) {
      const buffer = this.buffers[side || this.active];
      return buffer ? buffer.duration : 0;
    }

    get span() {
      return Math.max(this.duration("A"), this.duration("B"));
    }

    position() {
      if (!this.playing) return this.offset;
      const elapsed = Math.max(0, this.ctx.currentTime - this.startedAt);
      let pos = this.offset + elapsed;
      if (this.loop && pos >= this.loop.end) {
        const len = this.loop.end - this.loop.start;
        pos = this.loop.start + ((pos - this.loop.start) % len);
      }
      return pos;
    }

    // Seconds heard go to the clip that is audible, measured on the audio clock, so the
    // total can never exceed real listening time (the server checks exactly that).
    account() {
      const now = this.ctx.currentTime;
      if (this.playing && this.ctx.state === "running") {
        const from = Math.max(this.lastAccount, this.startedAt);
        let until = now;
        if (!this.loop) until = Math.min(now, this.startedAt + (this.duration(this.active) - this.offset));
        if (until > from) this.log[this.active].seconds += until - from;
        if (this.loop) {
          const len = this.loop.end - this.loop.start;
          const wraps = Math.max(0, Math.floor((this.offset + Math.max(0, now - this.startedAt) - this.loop.start) / len));
          if (wraps > this.wraps) this.log[this.active].loops += wraps - this.wraps;
          this.wraps = wraps;
        }
      }
      this.lastAccount = now;
    }

    _stopSources() {
      for (const source of Object.values(this.sources)) {
        source.onended = null;
        try {
          source.stop();
        } catch (_) {
          /* already stopped */
        }
        source.disconnect();
      }
      this.sources = {};
    }

    _startSources(at) {
      this._stopSources();
      // A small lead puts both sources on the same render quantum.
      const when = this.ctx.currentTime + 0.02;
      for (const side of this.labels) {
        const buffer = this.buffers[side];
        if (!buffer || at >= buffer.duration) continue;
        const source = this.ctx.createBufferSource();
        source.buffer = buffer;
        if (this.loop) {
          source.loop = true;
          source.loopStart = this.loop.start;
          source.loopEnd = this.loop.end;
        }
        source.connect(this._level(side).node);
        source.start(when, at);
        this.sources[side] = source;
      }
      this.offset = at;
      this.startedAt = when;
      this.lastAccount = when;
      this.wraps = 0;
    }

    _setGains(instant) {
      const now = this.ctx.currentTime;
      for (const side of Object.keys(this.gains)) {
        const param = this.gains[side].gain;
        const target = side === this.active ? 1 : 0;
        param.cancelScheduledValues(now);
        if (instant) {
          param.setValueAtTime(target, now);
        } else {
          param.setValueAtTime(param.value, now);
          param.linearRampToValueAtTime(target, now + CROSSFADE_S);
        }
      }
    }

    async play() {
      if (!this.ready || this.playing || this.starting) return;
      if (this.onPlay) this.onPlay();
      if (this.ctx.state !== "running") {
        this.starting = true;
        try {
          await this.ctx.resume();
        } finally {
          this.starting = false;
        }
        if (this.playing) return;
      }
      let at = this.offset;
      if (at >= this.duration(this.active) - 0.05) at = this.loop ? this.loop.start : 0;
      if (this.loop && (at < this.loop.start || at >= this.loop.end)) at = this.loop.start;
      this._setGains(true);
      this._startSources(at);
      this.playing = true;
      this.log[this.active].plays += 1;
      this._emit("play");
      this.onChange();
    }

    pause() {
      if (!this.playing) return;
      this.account();
      const pos = this.position();
      this._stopSources();
      this.playing = false;
      this.offset = pos;
      this._emit("pause");
      this.onChange();
    }

    toggle() {
      if (this.playing) this.pause();
      else this.play();
    }

    select(side) {
      if (side === this.active || !this.ready) return;
      this.account();
      const pos = this.position();
      this.active = side;
      this.log.switches += 1;
      this._emit("switch");
      if (this.playing) {
        if (pos >= this.duration(side)) {
          // The other clip is shorter and already over: start it from the top.
          this._setGains(true);
          this._startSources(this.loop ? this.loop.start : 0);
        } else {
          this._setGains(false);
        }
        this.log[side].plays += 1;
      } else {
        this._setGains(true);
        if (this.offset >= this.duration(side)) this.offset = 0;
      }
      this.onChange();
    }

    switchSide() {
      this.select(this.active === "A" ? "B" : "A");
    }

    seek(pos) {
      if (!this.ready) return;
      this.account();
      const max = this.duration(this.active);
      let target = Math.min(Math.max(0, pos), Math.max(0, max - 0.01));
      if (this.loop && (target < this.loop.start || target >= this.loop.end)) {
        this.loop = null; // seeking out of the loop ends it
      }
      this.log[this.active].seeks += 1;
      if (this.playing) this._startSources(target);
      else this.offset = target;
      this._emit("seek");
      this.onChange();
    }

    // L cycles: set the loop start at the playhead, then the end, then clear.
    loopKey() {
      if (!this.ready) return "";
      if (this.loop) {
        this.account();
        const pos = this.position();
        this.loop = null;
        this.loopStartPending = null;
        if (this.playing) this._startSources(pos);
        this.onChange();
        return "Loop cleared.";
      }
      const pos = this.position();
      if (this.loopStartPending === null) {
        this.loopStartPending = pos;
        this.onChange();
        return `Loop start set at ${fmtTime(pos, true)}. Press L again at the end point.`;
      }
      const shortest = Math.min(this.duration("A"), this.duration("B"));
      let start = Math.min(this.loopStartPending, pos);
      let end = Math.max(this.loopStartPending, pos);
      if (end - start < MIN_LOOP_S) end = start + MIN_LOOP_S;
      if (end > shortest) {
        end = shortest;
        start = Math.max(0, Math.min(start, end - MIN_LOOP_S));
      }
      this.loopStartPending = null;
      this.account();
      this.loop = { start, end };
      const resumeAt = this.playing ? Math.min(Math.max(this.position(), start), end - 0.01) : start;
      if (this.playing) this._startSources(resumeAt);
      else this.offset = resumeAt;
      this.onChange();
      return `Looping ${fmtTime(start, true)}–${fmtTime(end, true)}.`;
    }

    checkEnded() {
      if (!this.playing || this.loop) return;
      if (this.position() >= this.duration(this.active)) {
        this.account();
        this._stopSources();
        this.playing = false;
        this.offset = 0;
        this._emit("ended");
        this.onChange();
      }
    }

    destroy() {
      this._stopSources();
      this.playing = false;
      for (const gain of Object.values(this.gains)) gain.disconnect();
      for (const level of Object.values(this.levels)) level.node.disconnect();
    }
  }

  // ---- waveform drawing -------------------------------------------------------------

  function peaksFor(buffer, columns) {
    const peaks = new Float32Array(columns * 2);
    const channels = [];
    for (let c = 0; c < buffer.numberOfChannels; c += 1) channels.push(buffer.getChannelData(c));
    const per = buffer.length / columns;
    for (let x = 0; x < columns; x += 1) {
      let lo = 0;
      let hi = 0;
      const from = Math.floor(x * per);
      const to = Math.min(buffer.length, Math.floor((x + 1) * per));
      for (const data of channels) {
        for (let i = from; i < to; i += 1) {
          const v = data[i];
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
      }
      peaks[2 * x] = lo;
      peaks[2 * x + 1] = hi;
    }
    return peaks;
  }

  class Waveform {
    constructor(canvas, side) {
      this.canvas = canvas;
      this.side = side;
      this.peaks = null;
      this.buffer = null;
      this.span = 0;
    }

    setBuffer(buffer, span) {
      this.buffer = buffer;
      this.span = span;
      this.peaks = null;
    }

    draw(state) {
      const canvas = this.canvas;
      const ratio = window.devicePixelRatio || 1;
      const width = Math.max(50, Math.round(canvas.clientWidth * ratio));
      const height = Math.max(20, Math.round(canvas.clientHeight * ratio));
      if (canvas.width !== width || canvas.height !== height) {
        canvas.width = width;
        canvas.height = height;
        this.peaks = null;
      }
      const g = canvas.getContext("2d");
      g.clearRect(0, 0, width, height);
      const styles = getComputedStyle(canvas);
      const colour = styles.getPropertyValue(this.side === "A" ? "--side-a" : "--side-b").trim() || "#2f5bd3";
      g.fillStyle = state.active ? "#f8fafc" : "#f1f5f9";
      g.fillRect(0, 0, width, height);
      if (!this.buffer) return;
      // The clip is drawn to scale against the longer clip, so one x position is one time for both.
      const clipWidth = Math.max(1, Math.round((width * this.buffer.duration) / this.span));
      if (!this.peaks || this.peaks.length !== clipWidth * 2) this.peaks = peaksFor(this.buffer, clipWidth);
      if (state.loop) {
        const x0 = (state.loop.start / this.span) * width;
        const x1 = (state.loop.end / this.span) * width;
        g.fillStyle = "rgba(245, 158, 11, 0.22)";
        g.fillRect(x0, 0, x1 - x0, height);
      }
      const mid = height / 2;
      g.fillStyle = state.active ? colour : "#94a3b8";
      // Drawn at the level it plays at (its loudness gain), so the picture matches what is heard.
      const scale = state.scale || 1;
      for (let x = 0; x < clipWidth; x += 1) {
        const lo = Math.max(-1, this.peaks[2 * x] * scale);
        const hi = Math.min(1, this.peaks[2 * x + 1] * scale);
        const top = mid - hi * mid * 0.95;
        const bottom = mid - lo * mid * 0.95;
        g.fillRect(x, top, 1, Math.max(1, bottom - top));
      }
      if (state.loopStartPending !== null) {
        const xs = (state.loopStartPending / this.span) * width;
        g.fillStyle = "#f59e0b";
        g.fillRect(xs - ratio, 0, 2 * ratio, height);
      }
      const x = (state.position / this.span) * width;
      g.fillStyle = state.active ? "#111827" : "rgba(17, 24, 39, 0.35)";
      g.fillRect(x - ratio, 0, 2 * ratio, height);
    }
  }

  // ---- the transport's keys -------------------------------------------------------------

  /* Space, S, A, B, L, Home and the arrows drive the transport on every page that has one.
   * Returns true when the key was the transport's (the caller then stops there); `announce`
   * reads loop messages out to screen readers. */
  function transportKey(transport, event, announce) {
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    const target = event.target;
    switch (key) {
      case " ":
        // Space always drives the transport; buttons still activate with Enter.
        event.preventDefault();
        transport.toggle();
        return true;
      case "s":
        event.preventDefault();
        transport.switchSide();
        return true;
      case "a":
      case "b":
        event.preventDefault();
        transport.select(key.toUpperCase());
        return true;
      case "l":
        event.preventDefault();
        announce(transport.loopKey());
        return true;
      case "Home":
        event.preventDefault();
        transport.seek(0);
        return true;
      case "ArrowLeft":
      case "ArrowRight":
        if (target.matches && target.matches("input[type=radio]")) return false; // arrows move between radio options
        event.preventDefault();
        if (target.dataset && target.dataset.side) transport.select(target.dataset.side);
        transport.seek(transport.position() + (key === "ArrowLeft" ? -1 : 1) * (event.shiftKey ? SEEK_STEP_BIG : SEEK_STEP));
        return true;
      default:
        return false;
    }
  }

  // One clip row (its button, waveform and slider semantics) as the transport stands: the same on
  // the listening page and in the arena.
  function renderSide(s, transport, side, position, enabled) {
    const isActive = Boolean(transport && transport.active === side);
    s.button.disabled = !enabled;
    s.button.setAttribute("aria-pressed", String(isActive));
    s.button.closest(".clip-row").classList.toggle("active", isActive);
    s.canvas.tabIndex = enabled ? 0 : -1;
    const duration = transport ? transport.duration(side) : 0;
    s.canvas.setAttribute("aria-valuemax", duration.toFixed(1));
    s.canvas.setAttribute("aria-valuenow", Math.min(position, duration).toFixed(1));
    s.canvas.setAttribute("aria-valuetext", `${fmtTime(Math.min(position, duration))} of ${fmtTime(duration)}`);
    s.wave.draw({
      active: isActive,
      position,
      loop: transport ? transport.loop : null,
      loopStartPending: transport ? transport.loopStartPending : null,
      scale: transport && transport.levels[side] ? transport.levels[side].node.gain.value : 1,
    });
  }

  // The transport's time and loop lines.
  function transportText(transport, position) {
    const time = `${transport.active} ${fmtTime(position, true)} / ${fmtTime(transport.duration(transport.active), true)}`;
    let loop = "No loop";
    if (transport.loop) loop = `Loop ${fmtTime(transport.loop.start, true)}–${fmtTime(transport.loop.end, true)}`;
    else if (transport.loopStartPending !== null) loop = `Loop from ${fmtTime(transport.loopStartPending, true)}… (L to set the end)`;
    return { time, loop };
  }

  // Each side's elements in the player's markup (templates/includes/ab_player.html), its waveform drawn on its canvas.
  function playerSides() {
    const $ = (id) => document.getElementById(id);
    const sides = {};
    for (const side of SIDES) {
      sides[side] = {
        button: $(`btn-side-${side}`),
        canvas: $(`wave-${side}`),
        status: $(`wave-status-${side}`),
        heard: $(`heard-${side}`),
        meter: $(`heard-meter-${side}`),
        heardText: $(`heard-text-${side}`),
      };
      sides[side].wave = new Waveform(sides[side].canvas, side);
    }
    return sides;
  }

  // What the pages' read-only snapshots (diagnostics, browser tests) report of the transport.
  function transportState(transport, ctx) {
    return {
      ready: Boolean(transport && transport.ready),
      active: transport ? transport.active : null,
      playing: Boolean(transport && transport.playing),
      position: transport ? transport.position() : 0,
      audioTime: ctx ? ctx.currentTime : 0,
      loop: transport && transport.loop ? { ...transport.loop } : null,
      // Each clip's loudness gain as its GainNode holds it: {A: {db, value}, ...}.
      levels: transport ? transport.levelState() : {},
    };
  }

  // A click on a side's waveform: that side plays, from the point clicked.
  function seekToClick(transport, event) {
    const canvas = event.currentTarget;
    const rect = canvas.getBoundingClientRect();
    transport.select(canvas.dataset.side);
    transport.seek(((event.clientX - rect.left) / rect.width) * transport.span);
  }

  // Made on the first Play (browsers start audio only after a gesture), tuned for switching without delay.
  function newAudioContext() {
    const Ctor = window.AudioContext || window.webkitAudioContext;
    return new Ctor({ latencyHint: "interactive" });
  }

  window.AuditoriumAB = {
    SIDES,
    Transport,
    Waveform,
    applyGain,
    elementLevel,
    emptyLog,
    fmtTime,
    levelElement,
    newAudioContext,
    playerSides,
    renderSide,
    seekToClick,
    transportKey,
    transportState,
    transportText,
  };
})();
