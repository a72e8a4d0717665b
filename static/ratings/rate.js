/* The rating page (acr and multi-stimulus studies): instruction first, one transport over every clip of
 * the item (switching keeps the position), a rating per clip and dimension, and submit locked until the
 * server has counted each clip heard for the study's minimum.
 *
 * The transport is the shared one (static/js/ab-transport.js), widened from two sides to the item's
 * letters; the server's listening record decides, the page only reports events.
 */
(() => {
  "use strict";

  const AB = window.AuditoriumAB;
  const config = JSON.parse(document.getElementById("rate-config").textContent);
  const app = document.getElementById("rate-app");
  const $ = (id) => document.getElementById(id);
  const TICK_EVERY_MS = 1000;

  // The shared transport runs A and B from one clock; the same design over N letters.
  class MultiTransport extends AB.Transport {
    constructor(ctx, log, onChange, labels) {
      super(ctx, log, onChange);
      this.labels = labels;
      for (const side of labels) {
        if (this.gains[side]) continue;
        const gain = ctx.createGain();
        gain.gain.value = 0;
        gain.connect(ctx.destination);
        this.gains[side] = gain;
      }
      this.active = labels[0];
    }

    get ready() {
      return this.labels.every((side) => Boolean(this.buffers[side]));
    }

    get span() {
      return Math.max(...this.labels.map((side) => this.duration(side)));
    }

    switchSide() {
      const i = this.labels.indexOf(this.active);
      this.select(this.labels[(i + 1) % this.labels.length]);
    }
  }

  // POSTs JSON and answers the response's data; a failure throws with the server's message, which the
  // callers show in the error box (static/js/http.js).
  const api = window.AuditoriumHTTP.call;

  const url = (template, id) => template.replace("{id}", String(id));

  let task = null;
  let transport = null;
  let ctx = null;
  let rows = {};
  let answers = {};
  let heard = {};
  let queue = [];
  let seq = 1;
  let timers = [];
  let startedAt = 0;

  function stage(name) {
    app.dataset.stage = name;
    for (const el of app.querySelectorAll("[data-show]")) el.hidden = !el.dataset.show.split(" ").includes(name);
  }

  function showError(message) {
    const box = $("error-box");
    box.textContent = message || "";
    box.hidden = !message;
  }

  function flash(message) {
    const el = $("flash");
    el.textContent = message;
    el.hidden = !message;
  }

  // ---- listening events ---------------------------------------------------------------------

  // The server stamps each event on arrival and counts time between stamps, so events go out at
  // once, one post after the other (never two in flight, which could arrive out of order).
  let sending = Promise.resolve();
  const proofs = [];

  function record(kind, side, position) {
    queue.push({ seq: seq++, side, kind, position: Math.max(0, position || 0), client_time: performance.now() });
    sending = sending.then(flush);
  }

  async function flush() {
    if (!task || !queue.length) return;
    const batch = queue.splice(0, 50);
    // The clips' receipts (static/js/audio-proof.js) ride with the next events post; a refused one refuses the post,
    // so the events go again on their own and the submit names the clip.
    const receipts = proofs.splice(0, 8);
    if (receipts.length) {
      try {
        const result = await api(url(config.listeningUrl, task.id), { events: batch, receipts });
        heard = result.heard || heard;
        render();
        return;
      } catch (error) {
        /* fall through: the events alone */
      }
    }
    try {
      const result = await api(url(config.listeningUrl, task.id), { events: batch });
      heard = result.heard || heard;
      render();
    } catch (error) {
      showError(error.message);
    }
  }

  // ---- building the page ---------------------------------------------------------------------

  function scaleControl(label, dim) {
    const box = document.createElement("fieldset");
    box.className = "scale";
    const legend = document.createElement("legend");
    legend.textContent = `${dim.title}`;
    legend.title = dim.hint;
    box.append(legend);
    if (task.scale.kind === "acr") {
      const options = document.createElement("div");
      options.className = "acr-options";
      for (const option of task.scale.labels) {
        const wrap = document.createElement("label");
        const input = document.createElement("input");
        input.type = "radio";
        input.name = `r-${label}-${dim.key}`;
        input.value = String(option.value);
        input.dataset.clip = label;
        input.dataset.dim = dim.key;
        input.addEventListener("change", () => {
          answers[label][dim.key] = option.value;
          render();
        });
        wrap.append(input, ` ${option.value} ${option.label}`);
        options.append(wrap);
      }
      box.append(options);
    } else {
      const line = document.createElement("div");
      line.className = "slider-line";
      const input = document.createElement("input");
      input.type = "range";
      input.min = "0";
      input.max = "100";
      input.step = "1";
      input.value = "50";
      input.className = "unset";
      input.dataset.clip = label;
      input.dataset.dim = dim.key;
      input.setAttribute("aria-label", `Clip ${label}: ${dim.title} (0 to 100)`);
      const output = document.createElement("output");
      output.textContent = "not set";
      const set = () => {
        const value = Number(input.value);
        answers[label][dim.key] = value;
        input.classList.remove("unset");
        const band = task.scale.bands.find((b) => value >= b.from);
        output.textContent = `${value} ${band ? band.label : ""}`;
        render();
      };
      input.addEventListener("input", set);
      input.addEventListener("change", set);
      line.append(input, output);
      box.append(line);
    }
    return box;
  }

  function build() {
    const holder = $("clips");
    holder.textContent = "";
    rows = {};
    answers = {};
    for (const clip of task.clips) {
      answers[clip.label] = {};
      const card = document.createElement("div");
      card.className = "rate-clip";
      card.dataset.clip = clip.label;
      const row = document.createElement("div");
      row.className = "clip-row";
      const button = document.createElement("button");
      button.type = "button";
      button.className = "side-btn";
      button.textContent = clip.label;
      button.setAttribute("aria-label", `Listen to clip ${clip.label}`);
      button.addEventListener("click", () => transport && transport.select(clip.label));
      const wrap = document.createElement("div");
      wrap.className = "wave-wrap";
      const canvas = document.createElement("canvas");
      canvas.className = "wave";
      canvas.setAttribute("role", "slider");
      canvas.setAttribute("aria-label", `Waveform of clip ${clip.label}`);
      canvas.dataset.side = clip.label;
      canvas.addEventListener("click", (event) => {
        if (!transport || !transport.ready) return;
        transport.select(clip.label);
        const box = canvas.getBoundingClientRect();
        transport.seek(((event.clientX - box.left) / box.width) * transport.span);
      });
      wrap.append(canvas);
      const meter = document.createElement("div");
      meter.className = "heard";
      row.append(button, wrap, meter);
      const scales = document.createElement("div");
      scales.className = "scales";
      for (const dim of task.dimensions) scales.append(scaleControl(clip.label, dim));
      card.append(row, scales);
      holder.append(card);
      rows[clip.label] = { button, canvas, meter, wave: new AB.Waveform(canvas, "A") };
    }
  }

  function missing() {
    const out = [];
    const minimum = task.rules.min_listen_seconds;
    for (const clip of task.clips) {
      const seconds = heard[clip.label] || 0;
      if (seconds + 1e-6 < minimum) out.push(`Listen to clip ${clip.label} (${seconds.toFixed(1)} of ${minimum} s counted by the server)`);
    }
    for (const clip of task.clips) {
      for (const dim of task.dimensions) {
        if (answers[clip.label][dim.key] === undefined) out.push(`Rate clip ${clip.label}: ${dim.key}`);
      }
    }
    const rationale = $("rationale").value.trim();
    if (rationale.length < task.rules.rationale_min_length) out.push(`Write at least ${task.rules.rationale_min_length} characters on what you heard`);
    return out;
  }

  function render() {
    if (!task) return;
    const position = transport ? transport.position() : 0;
    for (const clip of task.clips) {
      const row = rows[clip.label];
      AB.renderSide(row, transport, clip.label, position, Boolean(transport && transport.ready));
      const seconds = heard[clip.label] || 0;
      const ok = seconds + 1e-6 >= task.rules.min_listen_seconds;
      row.meter.textContent = `${ok ? "✓ " : ""}heard ${seconds.toFixed(1)} / ${task.rules.min_listen_seconds} s`;
      row.meter.classList.toggle("ok", ok);
    }
    if (transport) {
      $("time-text").textContent = AB.transportText(transport, position).time;
      $("btn-play").firstChild.textContent = transport.playing ? "Pause " : "Play ";
    }
    const list = missing();
    $("missing").textContent = "";
    for (const line of list) {
      const li = document.createElement("li");
      li.textContent = line;
      $("missing").append(li);
    }
    $("btn-submit").disabled = list.length > 0;
  }

  // ---- audio ---------------------------------------------------------------------------------------

  async function load() {
    ctx = ctx || AB.newAudioContext();
    const labels = task.clips.map((c) => c.label);
    transport = new MultiTransport(ctx, AB.emptyLog(), render, labels);
    for (const label of labels) transport.log[label] = transport.log[label] || { plays: 0, seconds: 0, seeks: 0, loops: 0 };
    transport.onEvent = (kind, side, position) => record(kind, side, position);
    // The study's loudness matching: the gain the server sent with each clip (0 when it is off).
    for (const clip of task.clips) transport.setLevel(clip.label, clip.gain_db);
    await Promise.all(
      task.clips.map(async (clip) => {
        const response = await fetch(clip.url, { credentials: "same-origin" });
        if (!response.ok) throw new Error(`Clip ${clip.label} could not be loaded (${response.status}).`);
        const bytes = await response.arrayBuffer();
        const receipt = window.AuditoriumProof.receipt(response, bytes, clip.label);
        if (receipt) proofs.push(receipt);
        const buffer = await ctx.decodeAudioData(bytes);
        transport.buffers[clip.label] = buffer;
      }),
    );
    // One-clip items: the shared loop logic takes the shorter of A and B.
    if (!transport.buffers.B) transport.buffers.B = transport.buffers.A;
    for (const clip of task.clips) rows[clip.label].wave.setBuffer(transport.buffers[clip.label], transport.span);
    render();
  }

  // ---- the flow --------------------------------------------------------------------------------------

  function stopTimers() {
    for (const t of timers) clearInterval(t);
    timers = [];
  }

  async function next() {
    stopTimers();
    if (transport) transport.destroy();
    transport = null;
    task = null;
    stage("loading");
    showError("");
    let data;
    try {
      data = await api(config.nextUrl);
    } catch (error) {
      showError(error.message);
      return;
    }
    const progress = data.progress || (data.assignment && data.assignment.progress);
    if (progress) $("progress-text").textContent = `${progress.done} of ${progress.target} items rated`;
    if (!data.assignment) {
      $("empty-detail").textContent = data.detail || "";
      stage("empty");
      return;
    }
    task = data.assignment;
    seq = task.listening.next_seq;
    heard = task.listening.heard;
    queue = [];
    $("prompt").textContent = task.condition.prompt || "";
    $("lyrics").textContent = task.condition.lyrics || "";
    $("lyrics").hidden = !task.condition.lyrics;
    $("reference").hidden = !task.condition.reference;
    if (task.condition.reference) {
      $("reference-audio").src = task.condition.reference.url;
      ctx = ctx || AB.newAudioContext();
      AB.levelElement(ctx, $("reference-audio"), task.condition.reference.gain_db);
    }
    $("rationale").value = "";
    $("btn-skip").disabled = false;
    build();
    stage("instruction");
    startedAt = performance.now();
    load().catch((error) => showError(error.message));
  }

  function begin() {
    stage("task");
    timers.push(
      setInterval(() => {
        if (!transport) return;
        transport.checkEnded();
        if (transport.playing) {
          transport.account();
          record("tick", transport.active, transport.position());
        }
        render();
      }, TICK_EVERY_MS),
    );
    timers.push(setInterval(() => transport && transport.playing && render(), 100));
    render();
  }

  async function submit() {
    if (!task || missing().length) return;
    $("btn-submit").disabled = true;
    if (transport) transport.pause();
    await sending;
    await flush();
    const keyName = `rating-key-${task.id}`;
    const key = sessionStorage.getItem(keyName) || `${task.id}-${Math.random().toString(36).slice(2)}`;
    sessionStorage.setItem(keyName, key);
    try {
      await api(url(config.submitUrl, task.id), {
        idempotency_key: key,
        ratings: answers,
        rationale: $("rationale").value,
        time_on_page_ms: Math.round(performance.now() - startedAt),
      });
      flash("✓ Your ratings are saved.");
      next();
    } catch (error) {
      showError(error.message);
      render();
    }
  }

  $("btn-read").addEventListener("click", begin);
  $("btn-play").addEventListener("click", () => transport && transport.toggle());
  $("btn-submit").addEventListener("click", submit);
  $("rationale").addEventListener("input", render);
  $("btn-skip").addEventListener("click", async () => {
    const reason = window.prompt("Why do you skip this item? (for example: the audio does not play)");
    if (!reason || !task) return;
    try {
      await api(url(config.skipUrl, task.id), { reason });
      flash("Item skipped.");
      next();
    } catch (error) {
      showError(error.message);
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.target.matches && event.target.matches("textarea, input[type=text]")) return;
    if (app.dataset.stage === "instruction" && event.key === "Enter") {
      event.preventDefault();
      begin();
      return;
    }
    if (app.dataset.stage !== "task" || !transport) return;
    if (event.key.toLowerCase() === "s" || event.key === " " || event.key === "Home") AB.transportKey(transport, event, flash);
  });
  window.addEventListener("pagehide", () => flush());

  // Read-only view of the transport for diagnostics and the browser tests.
  window.auditoriumRating = {
    snapshot() {
      return {
        assignment: task ? task.id : null,
        stage: app.dataset.stage,
        ...AB.transportState(transport, ctx),
        referenceLevel: AB.elementLevel($("reference-audio")),
      };
    },
  };
  next();
})();
