/* Study report: small SVG plots drawn from the report JSON, and live refresh.
 *
 * No plotting library: four chart shapes are enough here, and the page must work
 * offline. The numbers behind every plot are also in the tables on the page.
 * Live refresh: the server pushes "changed" over a websocket (static/js/live.js);
 * the page then re-fetches its own body (debounced, so a burst of votes costs one
 * fetch) and falls back to polling when the socket is down.
 */
(function () {
  "use strict";

  const NS = "http://www.w3.org/2000/svg";
  // Okabe-Ito: distinguishable with the common colour-vision deficiencies.
  const COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"];
  const DIMS = ["alignment", "musicality"];
  const BUCKETS = ["<3", "=3", ">3"];
  const FLAGGED = "#b42318";

  function svgEl(tag, attrs, parent) {
    const node = document.createElementNS(NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (parent) parent.appendChild(node);
    return node;
  }

  function label(parent, x, y, content, attrs) {
    const node = svgEl("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    node.textContent = content;
    return node;
  }

  function linear(d0, d1, r0, r1) {
    const span = d1 - d0 || 1;
    return (v) => r0 + ((v - d0) / span) * (r1 - r0);
  }

  function pct(v) {
    return v === null || v === undefined ? "–" : (100 * v).toFixed(0) + "%";
  }

  function fixed(v) {
    return v === null || v === undefined ? "–" : Number(v).toFixed(2);
  }

  function ticks(min, max, count) {
    const step = (max - min) / count;
    const out = [];
    for (let i = 0; i <= count; i += 1) out.push(min + i * step);
    return out;
  }

  // Draw at the container's real width so 12px text stays 12px on every screen.
  function widthOf(container) {
    return Math.max(320, Math.round(container.getBoundingClientRect().width) || 560);
  }

  function frame(container, caption, width, height) {
    container.textContent = "";
    const svg = svgEl("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": caption }, container);
    svgEl("title", {}, svg).textContent = caption;
    return svg;
  }

  function legend(container, names, colors) {
    const box = document.createElement("div");
    box.className = "legend";
    names.forEach((name, i) => {
      const item = document.createElement("span");
      item.style.setProperty("--swatch", colors[i % colors.length]);
      item.textContent = name;
      box.appendChild(item);
    });
    container.appendChild(box);
  }

  function empty(container, message) {
    container.innerHTML = "";
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = message;
    container.appendChild(p);
  }

  function yAxis(svg, y, left, right, tickValues, fmt) {
    const grid = svgEl("g", { class: "grid" }, svg);
    tickValues.forEach((t) => {
      svgEl("line", { x1: left, x2: right, y1: y(t), y2: y(t) }, grid);
      label(svg, left - 6, y(t) + 4, fmt(t), { "text-anchor": "end" });
    });
  }

  /* Grouped bars with optional 95% whiskers. series: [{name, values[], lows[], highs[], titles[]}] */
  function groupedBars(container, opts) {
    const width = widthOf(container), height = 250, m = { top: 12, right: 12, bottom: 34, left: 46 };
    const svg = frame(container, opts.caption, width, height);
    const [lo, hi] = opts.yDomain;
    const y = linear(lo, hi, height - m.bottom, m.top);
    yAxis(svg, y, m.left, width - m.right, opts.yTicks || ticks(lo, hi, 4), opts.fmt);
    if (lo < 0) svgEl("line", { class: "ref", x1: m.left, x2: width - m.right, y1: y(0), y2: y(0) }, svg);
    const groupWidth = (width - m.left - m.right) / opts.categories.length;
    const barWidth = Math.min(34, (groupWidth * 0.8) / opts.series.length);
    opts.categories.forEach((category, ci) => {
      const gx = m.left + ci * groupWidth + (groupWidth - barWidth * opts.series.length) / 2;
      label(svg, m.left + ci * groupWidth + groupWidth / 2, height - m.bottom + 18, category, { "text-anchor": "middle" });
      opts.series.forEach((s, si) => {
        const v = s.values[ci];
        if (v === null || v === undefined) return;
        const x = gx + si * barWidth;
        const base = y(Math.max(lo, Math.min(0, hi)));
        const top = y(v);
        const rect = svgEl("rect", { x: x + 1, y: Math.min(top, base), width: barWidth - 2, height: Math.max(1, Math.abs(base - top)), fill: COLORS[si % COLORS.length], rx: 2 }, svg);
        svgEl("title", {}, rect).textContent = (s.titles && s.titles[ci]) || `${s.name} ${category}: ${opts.fmt(v)}`;
        if (s.lows && s.lows[ci] !== null && s.lows[ci] !== undefined) {
          const cx = x + barWidth / 2;
          svgEl("line", { class: "whisker", x1: cx, x2: cx, y1: y(s.lows[ci]), y2: y(s.highs[ci]) }, svg);
          svgEl("line", { class: "whisker", x1: cx - 4, x2: cx + 4, y1: y(s.lows[ci]), y2: y(s.lows[ci]) }, svg);
          svgEl("line", { class: "whisker", x1: cx - 4, x2: cx + 4, y1: y(s.highs[ci]), y2: y(s.highs[ci]) }, svg);
        }
      });
    });
    legend(container, opts.series.map((s) => s.name), COLORS);
  }

  /* Lines over ordered categories, one per series, points sized by n. */
  function lines(container, opts) {
    const width = widthOf(container), height = 250, m = { top: 12, right: 16, bottom: 34, left: 46 };
    const svg = frame(container, opts.caption, width, height);
    const y = linear(0, 1, height - m.bottom, m.top);
    yAxis(svg, y, m.left, width - m.right, ticks(0, 1, 4), pct);
    svgEl("line", { class: "ref", x1: m.left, x2: width - m.right, y1: y(0.5), y2: y(0.5) }, svg);
    label(svg, width - m.right, y(0.5) - 4, "chance", { "text-anchor": "end", "font-size": "11" });
    const step = (width - m.left - m.right) / opts.categories.length;
    const x = (i) => m.left + step * (i + 0.5);
    opts.categories.forEach((c, i) => label(svg, x(i), height - m.bottom + 18, c, { "text-anchor": "middle" }));
    opts.series.forEach((s, si) => {
      const color = COLORS[si % COLORS.length];
      const points = s.values.map((v, i) => (v === null || v === undefined ? null : [x(i), y(v), v, s.counts[i]]));
      let d = "";
      points.forEach((p) => {
        if (p) d += (d ? " L " : "M ") + p[0].toFixed(1) + " " + p[1].toFixed(1);
      });
      if (d) svgEl("path", { d: d, fill: "none", stroke: color, "stroke-width": 2 }, svg);
      points.forEach((p, i) => {
        if (!p) return;
        const dot = svgEl("circle", { cx: p[0], cy: p[1], r: 3 + Math.min(5, Math.sqrt(p[3] || 0) / 3), fill: color }, svg);
        svgEl("title", {}, dot).textContent = `${s.name} · confidence ${opts.categories[i]}: ${pct(p[2])} of ${p[3]} pairs`;
      });
    });
    legend(container, opts.series.map((s) => s.name), COLORS);
  }

  /* One row per annotator: share of "A" answers per dimension with its interval; 50% marked. */
  function dotRows(container, opts) {
    const rowHeight = 22, width = Math.min(widthOf(container), 900), m = { top: 22, right: 16, bottom: 10, left: 130 };
    const height = m.top + m.bottom + rowHeight * opts.rows.length;
    const svg = frame(container, opts.caption, width, height);
    const x = linear(0, 1, m.left, width - m.right);
    ticks(0, 1, 4).forEach((t) => {
      svgEl("line", { x1: x(t), x2: x(t), y1: m.top - 4, y2: height - m.bottom, stroke: "#e5e7eb" }, svg);
      label(svg, x(t), m.top - 8, pct(t), { "text-anchor": "middle" });
    });
    svgEl("line", { class: "ref", x1: x(0.5), x2: x(0.5), y1: m.top - 4, y2: height - m.bottom }, svg);
    opts.rows.forEach((row, ri) => {
      const cy = m.top + rowHeight * ri + rowHeight / 2;
      label(svg, m.left - 8, cy + 4, row.label, { "text-anchor": "end", fill: row.flagged ? FLAGGED : "#374151", "font-weight": row.flagged ? "700" : "400" });
      row.points.forEach((p, pi) => {
        if (p.value === null || p.value === undefined) return;
        const offset = (pi - (row.points.length - 1) / 2) * 6;
        const color = COLORS[pi % COLORS.length];
        if (p.low !== null && p.low !== undefined) svgEl("line", { x1: x(p.low), x2: x(p.high), y1: cy + offset, y2: cy + offset, stroke: color, "stroke-width": 2, opacity: 0.55 }, svg);
        const dot = svgEl("circle", { cx: x(p.value), cy: cy + offset, r: 4, fill: color }, svg);
        svgEl("title", {}, dot).textContent = `${row.label} · ${p.name}: ${pct(p.value)} chose A (95% ${pct(p.low)}–${pct(p.high)}; p=${p.p})`;
      });
    });
    legend(container, opts.series, COLORS);
  }

  function draw() {
    const source = document.getElementById("report-data");
    if (!source) return;
    const report = JSON.parse(source.textContent);
    const plots = {};
    document.querySelectorAll("[data-plot]").forEach((node) => (plots[node.dataset.plot] = node));
    const categories = BUCKETS.concat(["all"]);

    if (plots["agreement-rate"]) {
      const series = DIMS.map((dim) => {
        const block = report.agreement[dim];
        const rows = block.by_confidence.concat([block]);
        return {
          name: dim,
          values: rows.map((r) => r.agreement_rate),
          lows: rows.map((r) => r.agreement_ci[0]),
          highs: rows.map((r) => r.agreement_ci[1]),
          titles: rows.map((r, i) => `${dim} · ${categories[i]}: ${pct(r.agreement_rate)} of ${r.vote_pairs} vote pairs (${r.pairs} pairs)`),
        };
      });
      if (series.every((s) => s.values.every((v) => v === null))) empty(plots["agreement-rate"], "Needs pairs with two or more votes.");
      else groupedBars(plots["agreement-rate"], { caption: "Agreement rate by confidence", categories: categories, series: series, yDomain: [0, 1], fmt: pct });
    }
    if (plots["agreement-alpha"]) {
      const series = DIMS.map((dim) => {
        const block = report.agreement[dim];
        const rows = block.by_confidence.concat([block]);
        return { name: dim, values: rows.map((r) => r.alpha), lows: rows.map((r) => r.alpha_ci[0]), highs: rows.map((r) => r.alpha_ci[1]) };
      });
      const all = series.flatMap((s) => s.values.concat(s.lows)).filter((v) => v !== null && v !== undefined);
      if (!all.length) empty(plots["agreement-alpha"], "Needs pairs with two or more votes and both answers in use.");
      else {
        const lo = Math.min(0, Math.floor(Math.min(...all) * 4) / 4);
        groupedBars(plots["agreement-alpha"], { caption: "Krippendorff alpha by confidence", categories: categories, series: series, yDomain: [lo, 1], fmt: fixed, yTicks: ticks(lo, 1, Math.round((1 - lo) * 4)) });
      }
    }
    if (plots["confidence-histogram"]) {
      const hist = report.confidence.histogram;
      const max = Math.max(1, ...DIMS.flatMap((d) => hist[d].counts));
      const niceMax = Math.ceil(max / 4) * 4;
      groupedBars(plots["confidence-histogram"], {
        caption: "Confidence histogram",
        categories: hist.alignment.values.map((v) => String(v)),
        series: DIMS.map((d) => ({ name: `${d} (mean ${fixed(hist[d].mean)})`, values: hist[d].counts })),
        yDomain: [0, niceMax],
        fmt: (v) => String(Math.round(v)),
      });
    }
    if (plots["annotator-bias"]) {
      const rows = report.annotators
        .filter((a) => !a.excluded)
        .slice()
        .sort((a, b) => (b.a_share_alignment || 0) - (a.a_share_alignment || 0))
        .map((a) => ({
          label: a.pseudonym,
          flagged: a.flags.length > 0,
          points: DIMS.map((d) => ({ name: d, value: a[`a_share_${d}`], low: a[`a_share_ci_${d}`][0], high: a[`a_share_ci_${d}`][1], p: a[`a_share_p_${d}`] })),
        }));
      if (!rows.length) empty(plots["annotator-bias"], "No included annotator has voted yet.");
      else dotRows(plots["annotator-bias"], { caption: "Share of A answers per annotator", rows: rows, series: DIMS });
    }
    DIMS.forEach((dim) => {
      const node = plots[`judge-confidence-${dim}`];
      if (!node) return;
      const series = report.judges
        .filter((j) => j.dimensions[dim] && j.dimensions[dim].n > 0)
        .map((j) => ({
          name: j.label,
          values: BUCKETS.map((b) => j.dimensions[dim].by_confidence[b].accuracy),
          counts: BUCKETS.map((b) => j.dimensions[dim].by_confidence[b].n),
        }));
      if (!series.length) empty(node, `No judge answered on ${dim} for pairs with human votes.`);
      else lines(node, { caption: `${dim} accuracy by annotator confidence`, categories: BUCKETS, series: series });
    });
  }

  // --- Live refresh (static/js/live.js) --------------------------------------------------------

  const body = document.getElementById("report-body");
  const status = document.getElementById("live-status");
  let live = null;
  let timer = null;

  function setStatus(text, cls) {
    if (!status) return;
    status.textContent = text;
    status.className = "pill " + (cls || "");
  }

  function busy() {
    // Never swap the page under someone who is listening or typing a reason.
    const playing = Array.from(body.querySelectorAll("audio")).some((a) => !a.paused);
    const active = document.activeElement;
    const typing = active && body.contains(active) && active.tagName === "INPUT" && active.value;
    return playing || typing;
  }

  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(refresh, ms);
  }

  async function refresh() {
    if (busy()) {
      setStatus("update waiting", "stale");
      schedule(5000);
      return;
    }
    const socketOpen = Boolean(live && live.live);
    try {
      const response = await fetch(window.location.href, { headers: { "X-Report-Refresh": "1" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      body.innerHTML = await response.text();
      draw();
      // The swapped-in tables scroll sideways on a phone: keyboard-reachable in the same task, not after the observer's pause.
      if (window.AuditoriumScrollRegions) window.AuditoriumScrollRegions.mark();
      setStatus((socketOpen ? "live · " : "polling · ") + "updated " + new Date().toLocaleTimeString(), socketOpen ? "live" : "");
    } catch (err) {
      setStatus("refresh failed, retrying", "stale");
    }
  }

  // Once polling, each refresh says so itself ("polling · updated …").
  const STATUS = { connecting: "polling", refused: "polling", live: "live" };

  draw();
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(draw, 200);
  });
  if (body) {
    live = window.AuditoriumLive.connect(body.dataset.wsPath, {
      onMessage: (message) => {
        if (message.type === "changed") schedule(1500);
      },
      onStatus: (state) => setStatus(STATUS[state] || "polling (reconnecting)", state === "live" ? "live" : ""),
      poll: { run: refresh, everyMs: Math.max(5, Number(body.dataset.pollSeconds || 30)) * 1000 },
    });
  }
  window.auditoriumReport = { draw: draw, refresh: refresh };
})();
