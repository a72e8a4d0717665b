// Leaderboard page: renders the table and an interval plot (inline SVG), then follows live refits over a
// websocket, polling while it is down. Seeded demo votes on a board are named above its table.
(function () {
  "use strict";
  const root = document.getElementById("leaderboard");
  if (!root) return;
  let data = JSON.parse(document.getElementById("board-data").textContent);
  let current = "instrumental";
  const NS = "http://www.w3.org/2000/svg";

  function el(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function render() {
    const board = (data.boards || {})[current];
    const tbody = document.getElementById("board-rows");
    tbody.innerHTML = "";
    const rows = board ? board.rows : [];
    const when = data.computed_at ? new Date(data.computed_at).toLocaleString() : "never";
    document.getElementById("board-meta").textContent = board
      ? board.votes + " votes · " + board.rounds + " bootstrap rounds · listed from " + board.min_votes + " votes · updated " + when
      : "No votes yet.";
    if (!rows.length) {
      const tr = document.createElement("tr");
      const td = document.createElement("td");
      td.colSpan = 5;
      td.textContent = "No system has enough votes on this board yet.";
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
    for (const r of rows) {
      const tr = document.createElement("tr");
      const cells = [r.rank, r.system, r.rating.toFixed(1), r.lower.toFixed(1) + " – " + r.upper.toFixed(1), r.votes];
      cells.forEach((value, i) => {
        const td = document.createElement("td");
        td.textContent = value;
        if (i !== 1) td.className = "num";
        tr.appendChild(td);
      });
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
    plot(rows);
  }

  function plot(rows) {
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
    let lo = Math.min(...rows.map((r) => r.lower)), hi = Math.max(...rows.map((r) => r.upper));
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
      svg.appendChild(el("line", { x1: x(r.lower), x2: x(r.upper), y1: y, y2: y, stroke: "#2f5bd3", "stroke-width": 3, "stroke-linecap": "round" }));
      svg.appendChild(el("circle", { cx: x(r.rating), cy: y, r: 5, fill: "#111827" }));
    });
    box.appendChild(svg);
  }

  document.querySelectorAll(".board-tabs button").forEach((b) => {
    b.addEventListener("click", () => {
      current = b.dataset.board;
      document.querySelectorAll(".board-tabs button").forEach((o) => o.setAttribute("aria-selected", String(o === b)));
      render();
    });
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
