// The two DOM builders the arena's board and history pages share: an SVG element with its attributes, and a table
// cell with an optional second line.
(function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function cell(tr, text, cls, sub) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    if (sub) {
      const span = document.createElement("span");
      span.className = "sub";
      span.textContent = sub;
      td.appendChild(span);
    }
    tr.appendChild(td);
    return td;
  }

  window.AuditoriumDom = { svg, cell };
})();
