// Ratings over time: one system's plain rating (with its interval as a band) and style-controlled rating at
// every snapshot of the boards, as an inline SVG and a table; the board and the system are chosen on the page.
(function () {
  "use strict";
  const root = document.getElementById("history");
  if (!root) return;
  const data = JSON.parse(document.getElementById("history-data").textContent);
  const picker = document.getElementById("history-system");
  let board = "instrumental";
  let system = root.dataset.system || "";

  const { svg: el, cell } = window.AuditoriumDom;
  const label = (p) => p.period || p.cutoff.slice(0, 10) + " (on demand)";

  function systems() {
    return Object.keys((data.boards || {})[board] || {}).sort();
  }

  function options() {
    const names = systems();
    if (!names.includes(system)) system = names[0] || "";
    picker.innerHTML = "";
    for (const name of names) picker.appendChild(new Option(name, name, false, name === system));
  }

  function render() {
    options();
    const points = system ? data.boards[board][system] : [];
    const meta = document.getElementById("history-meta");
    meta.textContent = !data.snapshots.length ? "No snapshot yet: one is taken at the end of every month (manage.py arena_snapshot takes one now)."
      : !points.length ? "No system is ranked on this board in any snapshot yet."
      : system + " on the " + board + " board: " + points.length + " of " + data.snapshots.length + " snapshots list it.";
    const tbody = document.getElementById("history-rows");
    tbody.innerHTML = "";
    for (const p of points) {
      const tr = document.createElement("tr");
      const cells = [
        [label(p), ""],
        [p.rating.toFixed(1), "num", p.lower.toFixed(1) + " – " + p.upper.toFixed(1)],
        [p.rank, "num"],
        [p.style_rating === null ? "–" : p.style_rating.toFixed(1), "num styled", p.style_rank === null ? "" : "rank " + p.style_rank],
        [p.votes, "num votes-col"],
      ];
      for (const [text, cls, sub] of cells) cell(tr, text, cls, sub);
      tbody.appendChild(tr);
    }
    plot(points);
  }

  function plot(points) {
    const box = document.getElementById("history-plot");
    box.innerHTML = "";
    if (!points.length) return;
    const width = Math.max(280, Math.min(760, box.clientWidth || 760));
    const left = 48, right = 14, top = 14, bottom = 40, height = 240;
    const values = points.flatMap((p) => [p.lower, p.upper].concat(p.style_rating === null ? [] : [p.style_rating]));
    let lo = Math.min(...values), hi = Math.max(...values);
    const pad = Math.max(10, (hi - lo) * 0.1);
    lo -= pad; hi += pad;
    const n = points.length;
    const x = (i) => (n === 1 ? (left + width - right) / 2 : left + (i / (n - 1)) * (width - left - right));
    const y = (v) => top + (1 - (v - lo) / (hi - lo)) * (height - top - bottom);
    const svg = el("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img", class: "ci-plot", "aria-label": system + "'s rating over time" });
    let step = Math.pow(10, Math.floor(Math.log10(hi - lo)));
    while ((hi - lo) / step < 3) step /= 2;
    while (y(lo) - y(lo + step) < 24) step *= 2;
    for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) {
      svg.appendChild(el("line", { x1: left, x2: width - right, y1: y(t), y2: y(t), stroke: "#e5e7eb" }));
      svg.appendChild(el("text", { x: left - 6, y: y(t) + 4, "text-anchor": "end" }, Math.round(t)));
    }
    // The interval as a band: along the upper bounds, then back along the lower ones.
    const band = points.map((p, i) => x(i) + "," + y(p.upper));
    for (let i = n - 1; i >= 0; i--) band.push(x(i) + "," + y(points[i].lower));
    svg.appendChild(el("polygon", { points: band.join(" "), fill: "#2f5bd3", "fill-opacity": 0.15 }));
    svg.appendChild(el("polyline", { points: points.map((p, i) => x(i) + "," + y(p.rating)).join(" "), fill: "none", stroke: "#2f5bd3", "stroke-width": 2 }));
    const styled = points.map((p, i) => (p.style_rating === null ? null : x(i) + "," + y(p.style_rating))).filter(Boolean);
    if (styled.length) svg.appendChild(el("polyline", { points: styled.join(" "), fill: "none", stroke: "#ea580c", "stroke-width": 2, "stroke-dasharray": "5 4" }));
    // Labels: every one when they fit, else every k-th.
    const every = Math.max(1, Math.ceil(n / Math.max(1, Math.floor((width - left - right) / 70))));
    points.forEach((p, i) => {
      svg.appendChild(el("circle", { cx: x(i), cy: y(p.rating), r: 3.5, fill: "#111827" }));
      // The first and last labels hang inward, so neither runs off the chart.
      const anchor = n > 1 && i === 0 ? "start" : n > 1 && i === n - 1 ? "end" : "middle";
      if (i % every === 0 || i === n - 1) svg.appendChild(el("text", { x: x(i), y: height - bottom + 16, "text-anchor": anchor }, p.period || p.cutoff.slice(0, 10)));
    });
    box.appendChild(svg);
  }

  document.querySelectorAll(".board-tabs button").forEach((b) => {
    b.addEventListener("click", () => {
      board = b.dataset.board;
      document.querySelectorAll(".board-tabs button").forEach((o) => o.setAttribute("aria-selected", String(o === b)));
      render();
    });
  });
  picker.addEventListener("change", () => {
    system = picker.value;
    render();
  });
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(render, 150);
  });
  render();
})();
