// Leaderboard page: renders the table and an interval plot (inline SVG), then follows live refits over a
// websocket, polling while it is down. Seeded demo votes on a board are named above its table. Where the
// board has a style-controlled fit, its rank, rating and interval sit beside the plain ones, with each
// style covariate's effect below.
(function () {
  "use strict";
  const root = document.getElementById("leaderboard");
  if (!root) return;
  let data = JSON.parse(document.getElementById("board-data").textContent);
  let current = "instrumental";
  const { svg: el, cell } = window.AuditoriumDom;

  const fmt = (v) => v.toFixed(1);
  // Small figures (a demo system's real-time factor, a covariate's unit of a few milliseconds) keep two significant digits.
  const figure = (v) => (Math.abs(v) >= 1 || v === 0 ? v.toFixed(2) : Number(v.toPrecision(2)).toString());
  const span = (lo, hi) => fmt(lo) + " – " + fmt(hi);

  // "" for the instrumental / vocal tabs, else "family:value" of a category board (data.categories).
  let category = "";
  const categorySelect = document.getElementById("category");

  function categoryBoard(key) {
    const at = key.indexOf(":");
    const family = ((data.categories || {}).families || {})[key.slice(0, at)];
    return family ? family.values[key.slice(at + 1)] : undefined;
  }

  function currentBoard() {
    return category ? categoryBoard(category) : (data.boards || {})[current];
  }

  function categoryOptions() {
    const families = (data.categories || {}).families || {};
    document.getElementById("category-pick").hidden = !Object.keys(families).length;
    categorySelect.innerHTML = "";
    categorySelect.appendChild(new Option("Instrumental and vocal boards", ""));
    for (const name of Object.keys(families)) {
      const group = document.createElement("optgroup");
      group.label = families[name].label;
      for (const [value, b] of Object.entries(families[name].values)) {
        const label = value + " (" + b.votes + (b.too_few ? " votes, too few)" : " votes)");
        group.appendChild(new Option(label, name + ":" + value));
      }
      categorySelect.appendChild(group);
    }
    // A category that left the payload (the board changed) falls back to the main boards.
    if (category && !categoryBoard(category)) category = "";
    categorySelect.value = category;
    const about = document.getElementById("category-about");
    about.hidden = !category;
    if (category) {
      const family = families[category.slice(0, category.indexOf(":"))];
      about.textContent = family.label + ": " + category.slice(category.indexOf(":") + 1) +
        " · every battle in this category, instrumental and vocal together. Genre and mood are read from the prompt's words; language from its writing system.";
    }
  }

  function render() {
    categoryOptions();
    const board = currentBoard();
    const tbody = document.getElementById("board-rows");
    tbody.innerHTML = "";
    const rows = board ? board.rows : [];
    const tooFew = board && board.too_few;
    const style = board && board.style ? board.style : null;
    const styled = {};
    if (style) for (const r of style.rows) styled[r.system] = r;
    document.getElementById("board-groups").hidden = !style;
    document.querySelectorAll(".style-col").forEach((th) => { th.hidden = !style; });
    const when = data.computed_at ? new Date(data.computed_at).toLocaleString() : "never";
    const needed = (data.categories || {}).min_votes;
    document.getElementById("board-meta").textContent = !board ? "No votes yet."
      : tooFew ? board.votes + " votes in this category · updated " + when
      : board.votes + " votes · " + board.rounds + " bootstrap rounds · listed from " + board.min_votes + " votes · updated " + when;
    if (!rows.length) {
      const tr = document.createElement("tr");
      const td = cell(tr, tooFew
        ? "Too few votes for a board: this category has " + board.votes + (board.votes === 1 ? " vote" : " votes") + "; a category board is fitted from " + needed + "."
        : "No system has enough votes on this board yet.");
      td.colSpan = style ? 7 : 4;
      tbody.appendChild(tr);
    }
    for (const r of rows) {
      const tr = document.createElement("tr");
      cell(tr, r.rank, "num");
      cell(tr, r.system);
      cell(tr, fmt(r.rating), "num", span(r.lower, r.upper));
      if (style) {
        const s = styled[r.system];
        if (s) {
          cell(tr, s.rank, "num styled");
          cell(tr, fmt(s.rating), "num styled", span(s.interval[0], s.interval[1]));
          const change = s.rank_change;
          cell(tr, change > 0 ? "+" + change : change < 0 ? "−" + -change : "0", "num styled" + (change > 0 ? " up" : change < 0 ? " down" : ""));
        } else {
          const td = cell(tr, "not in the style fit", "styled muted");
          td.colSpan = 3;
        }
      }
      cell(tr, r.votes, "num votes-col");
      tbody.appendChild(tr);
    }
    const seeded = board && board.seeded_votes ? board.seeded_votes : 0;
    const seededNote = document.getElementById("seeded-note");
    seededNote.hidden = !seeded;
    const about = ": demo data drawn from the demo systems' known quality; no one listened. The battle-log release leaves them out.";
    seededNote.textContent = !seeded ? ""
      : seeded === board.votes ? "All " + seeded + " votes on this board are seeded demo votes" + about
      : "Includes " + seeded + " seeded demo vote" + (seeded === 1 ? "" : "s") + " of " + board.votes + about;
    const preliminary = board && board.preliminary ? board.preliminary : [];
    const note = document.getElementById("preliminary");
    note.hidden = !preliminary.length;
    note.textContent = preliminary.length
      ? "Preliminary, not ranked until they have " + board.min_votes + " votes: " +
        preliminary.map((p) => p.system + " (" + p.votes + (p.votes === 1 ? " vote)" : " votes)")).join(", ") + "."
      : "";
    covariates(style);
    screened();
    systemsTable();
    plot(rows, styled);
  }

  const WEIGHTS = { true: "open weights", false: "closed weights", null: "weights: unknown" };

  function systemsTable() {
    const systems = data.systems || {};
    const names = Object.keys(systems);
    document.getElementById("systems-card").hidden = !names.length;
    const tbody = document.getElementById("systems-rows");
    tbody.innerHTML = "";
    for (const name of names) {
      const s = systems[name];
      const tr = document.createElement("tr");
      cell(tr, name, "", s.organisation || "organisation not given");
      cell(tr, s.licence || "–", "", WEIGHTS[String(s.open_weights)]);
      cell(tr, s.training_data || "not given");
      cell(tr, s.real_time_factor === null ? "–" : figure(s.real_time_factor), "num", s.real_time_factor_clips ? s.real_time_factor_clips + " clips" : "");
      tbody.appendChild(tr);
    }
  }

  function screened() {
    const screen = data.screen;
    const card = document.getElementById("screen-card");
    const board = screen && !category ? (screen.boards || {})[current] : null;
    card.hidden = !board;
    if (!board) return;
    const pct = (screen.fp_rate * 100).toLocaleString(undefined, { maximumFractionDigits: 2 }) + " %";
    const flagged = screen.flagged.length;
    document.getElementById("screen-meta").textContent =
      "Each visitor with at least " + screen.min_votes + " decided votes is tested for how far their votes depart from the board " +
      "(a likelihood test that flags an honest visitor with probability " + pct + "). " +
      screen.tested + " of " + screen.visitors + " visitors tested, " + flagged + " flagged; their " + screen.flagged_votes_left_out +
      " votes are left out of this board, and " + screen.repeated_votes + " votes on repeated prompts count for less " +
      "(one visitor's same prompt and pair once in all; a typed prompt pasted many times as 20): the board's " + board.votes +
      " votes weigh " + board.weighted_votes + ".";
    const plainRank = {};
    for (const r of (data.boards[current] || { rows: [] }).rows) plainRank[r.system] = r.rank;
    const tbody = document.getElementById("screen-rows");
    tbody.innerHTML = "";
    if (!board.rows.length) {
      const tr = document.createElement("tr");
      cell(tr, "No system has enough votes on this board yet.").colSpan = 5;
      tbody.appendChild(tr);
    }
    for (const r of board.rows) {
      const tr = document.createElement("tr");
      cell(tr, r.rank, "num");
      cell(tr, r.system);
      cell(tr, fmt(r.rating), "num", span(r.lower, r.upper));
      cell(tr, r.votes, "num votes-col");
      cell(tr, plainRank[r.system] === undefined ? "–" : plainRank[r.system], "num");
      tbody.appendChild(tr);
    }
  }

  const COVARIATE_NAMES = { duration: "Duration", loudness: "Loudness as generated", true_peak: "True peak as generated", vocals: "Vocals present", generation_seconds: "Generation time" };

  function covariates(style) {
    const card = document.getElementById("style-card");
    card.hidden = !style;
    if (!style) return;
    const tbody = document.getElementById("style-rows");
    tbody.innerHTML = "";
    const names = Object.keys(style.covariates);
    document.getElementById("style-meta").textContent =
      style.votes + " votes in the style fit" + (style.left_out ? " · " + style.left_out + " left out: a clip without every covariate measured" : "") + ".";
    const weak = [];
    for (const name of names) {
      const c = style.covariates[name];
      const tr = document.createElement("tr");
      cell(tr, COVARIATE_NAMES[name] || name);
      const signed = (v) => (v > 0 ? "+" : v < 0 ? "−" : "") + Math.abs(v).toFixed(3);
      cell(tr, signed(c.coefficient), "num", signed(c.interval[0]) + " to " + signed(c.interval[1]));
      cell(tr, name === "vocals" ? "vocals vs none" : figure(c.scale) + " " + c.unit, "num");
      cell(tr, (c.elo > 0 ? "+" : c.elo < 0 ? "−" : "") + Math.abs(c.elo).toFixed(0), "num");
      tbody.appendChild(tr);
      if (c.own_variation !== undefined && c.own_variation < (style.own_variation_low || 0.2)) weak.push(COVARIATE_NAMES[name] || name);
    }
    if (!names.length) {
      const tr = document.createElement("tr");
      cell(tr, "No covariate varies on this board.").colSpan = 4;
      tbody.appendChild(tr);
    }
    const notes = [];
    if (style.constant && style.constant.length)
      notes.push("Not fitted, no variation on this board: " + style.constant.map((n) => COVARIATE_NAMES[n] || n).join(", ") + ".");
    if (weak.length)
      notes.push(weak.join(", ") + (weak.length === 1 ? " is" : " are") +
        " mostly fixed by which systems met (each system about the same in every clip): the fit cannot tell it apart from the systems' quality, so the effect is uncertain.");
    const box = document.getElementById("style-notes");
    box.hidden = !notes.length;
    box.textContent = notes.join(" ");
  }

  function plot(rows, styled) {
    const box = document.getElementById("plot");
    box.innerHTML = "";
    // No card without a chart: an empty card reads as something failed to load.
    document.getElementById("plot-card").hidden = !rows.length;
    if (!rows.length) return;
    // Drawn at the box's own width in CSS pixels (no viewBox scaling), so the 12 px labels stay 12 px on a phone.
    const width = Math.max(280, Math.min(760, box.clientWidth || 760));
    const left = Math.round(Math.min(150, width * 0.36)), right = 16, rowH = 28, top = 20, bottom = 34;
    const maxChars = Math.max(6, Math.floor((left - 14) / 7));
    const label = (text) => (text.length > maxChars ? text.slice(0, maxChars - 1) + "…" : text);
    const height = top + bottom + rowH * rows.length;
    styled = styled || {};
    const shown = rows.map((r) => styled[r.system]).filter(Boolean);
    document.getElementById("plot-key").hidden = !shown.length;
    let lo = Math.min(...rows.map((r) => r.lower), ...shown.map((s) => s.interval[0]));
    let hi = Math.max(...rows.map((r) => r.upper), ...shown.map((s) => s.interval[1]));
    const pad = Math.max(10, (hi - lo) * 0.08);
    lo -= pad; hi += pad;
    const x = (v) => left + ((v - lo) / (hi - lo)) * (width - left - right);
    const svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img", class: "ci-plot", "aria-label": "Ratings with 95% intervals" });
    let step = Math.pow(10, Math.floor(Math.log10(hi - lo))) / (((hi - lo) / Math.pow(10, Math.floor(Math.log10(hi - lo)))) < 3 ? 4 : 1);
    // Tick labels ("1000") need about 44 px each: on a phone fewer, wider steps, so they never run together.
    while (x(lo + step) - x(lo) < 44) step *= 2;
    for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) {
      svg.appendChild(el("line", { x1: x(t), x2: x(t), y1: top - 6, y2: height - bottom, stroke: "#e5e7eb" }));
      svg.appendChild(el("text", { x: x(t), y: height - bottom + 16, "text-anchor": "middle" }, Math.round(t)));
    }
    svg.appendChild(el("text", { x: (left + width - right) / 2, y: height - 4, "text-anchor": "middle" }, "rating (Elo scale)"));
    rows.forEach((r, i) => {
      const y = top + rowH * i + rowH / 2;
      const name = el("text", { x: left - 10, y: y + 4, "text-anchor": "end" }, label(r.rank + ". " + r.system));
      name.appendChild(el("title", {}, r.system));
      svg.appendChild(name);
      const s = styled[r.system];
      const yp = s ? y - 5 : y;
      svg.appendChild(el("line", { x1: x(r.lower), x2: x(r.upper), y1: yp, y2: yp, stroke: "#2f5bd3", "stroke-width": 3, "stroke-linecap": "round" }));
      svg.appendChild(el("circle", { cx: x(r.rating), cy: yp, r: s ? 4 : 5, fill: "#111827", class: "plain" }));
      if (s) {
        svg.appendChild(el("line", { x1: x(s.interval[0]), x2: x(s.interval[1]), y1: y + 5, y2: y + 5, stroke: "#ea580c", "stroke-width": 3, "stroke-linecap": "round" }));
        svg.appendChild(el("circle", { cx: x(s.rating), cy: y + 5, r: 4, fill: "#7c2d12", class: "styled" }));
      }
    });
    box.appendChild(svg);
  }

  function selectTabs(chosen) {
    document.querySelectorAll(".board-tabs button").forEach((o) => o.setAttribute("aria-selected", String(o === chosen)));
  }
  document.querySelectorAll(".board-tabs button").forEach((b) => {
    b.addEventListener("click", () => {
      current = b.dataset.board;
      category = "";
      selectTabs(b);
      render();
    });
  });
  categorySelect.addEventListener("change", () => {
    category = categorySelect.value;
    selectTabs(category ? null : document.querySelector('.board-tabs button[data-board="' + current + '"]'));
    render();
  });

  // Live over the websocket (pushes cross processes through the channel layer; static/js/live.js). While
  // the socket is down the page polls the board every POLL_MS instead, and the badge says so: it never
  // claims "live" when it is not.
  const live = document.getElementById("live");
  const POLL_MS = 2000;
  let seen = JSON.stringify(data);

  function badge(text, on) {
    live.textContent = text;
    live.className = on ? "live on" : "live off";
  }
  function show(payload) {
    const text = JSON.stringify(payload);
    if (text === seen) return;
    seen = text;
    data = payload;
    render();
  }
  const every = "every " + POLL_MS / 1000 + " s";
  const badges = { live: ["live", true], unreachable: ["server unreachable · retrying " + every, false] };
  function status(state) {
    if (state === "connecting") return;
    const [text, on] = badges[state] || ["updating " + every, false];
    badge(text, on);
  }
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(render, 150);
  });
  render();
  window.AuditoriumLive.connect("/ws/arena/leaderboard/", {
    onMessage: (msg) => {
      if (msg.type === "leaderboard") show(msg.payload);
    },
    onStatus: status,
    // catchUp: a refit pushed while the socket was down is fetched once it is back.
    poll: { url: root.dataset.api, everyMs: POLL_MS, onData: show, catchUp: true },
  });
})();
