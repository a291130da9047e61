// npusim's HTML reports: the chart helpers every page shares (report.html, serving.html,
// training.html, generation.html; their styles are chart_styles.css). support/text_escape.cpp's
// html_page_with_data puts this text where a page's script says @NPUSIM_CHARTS_JS@, inside the
// page's own function, so these names are local to it.
  const NS = "http://www.w3.org/2000/svg";
  function el(parent, name, attrs, text) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    parent.appendChild(e);
    return e;
  }
  function fmt(x, digits) {
    if (x === undefined || x === null) return "";
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x)) return x.toLocaleString("en-US");
    return x.toPrecision(digits || 4);
  }
  function colour(i) {
    return "hsl(" + ((i * 137.508) % 360).toFixed(1) + ",55%,58%)";
  }
  function table(parent, head, rows) {
    const t = document.createElement("table");
    if (head) {
      const tr = t.createTHead().insertRow();
      head.forEach((h, i) => {
        const th = document.createElement("th");
        th.textContent = h;
        if (i > 0) th.className = "num";
        tr.appendChild(th);
      });
    }
    const body = t.createTBody();
    for (const row of rows) {
      const tr = body.insertRow();
      row.forEach((v, i) => {
        const c = tr.insertCell();
        c.textContent = v;
        if (i > 0) c.className = "num";
      });
    }
    parent.appendChild(t);
    return t;
  }
  // Energy, power and area: stacked bars whose segments carry their figure (data-value) and the
  // stats.json key it comes from (data-part), so a test can add them up against stats.json.
  const partColours = {
    matrix_unit: "#4e79a7", vector_unit: "#f28e2b", dma: "#59a14f", control: "#b07aa1",
    unified_buffer: "#76b7b2", weight_buffer: "#edc948", accumulators: "#9c755f",
    memory_phy: "#ff9da7", other: "#bab0ac", dram: "#e15759", leakage: "#7f7f7f",
    idle: "#9aa5b1", dynamic: "#2f6db5",
  };
  const partColour = (name, i) => partColours[name] || colour(i);
  // The power model's order (docs/power.md): units, buffers, the rest of the die, then off-chip
  // memory and leakage; stats.json lists keys alphabetically.
  const partOrder = Object.keys(partColours);
  const byPartOrder = (a, b) => {
    const ia = partOrder.indexOf(a[0]), ib = partOrder.indexOf(b[0]);
    return (ia < 0 ? 1e9 : ia) - (ib < 0 ? 1e9 : ib) || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  };

  // rows: [{label, parts: [[name, value], ...], mark: optional value drawn as a tick}].
  // Segments at least 34 px wide show their share of the bar unless `shares` is false.
  function stacked(svgId, rows, unit, shares) {
    const svg = document.getElementById(svgId);
    const barH = 16, labelW = 190, valueW = 150;
    const w = Math.max(700, Math.min(1400, svg.parentNode.clientWidth - 4));
    const plot = w - labelW - valueW;
    const sum = (r) => r.parts.reduce((a, [, v]) => a + v, 0);
    const max = Math.max(1e-30, ...rows.map((r) => Math.max(sum(r), r.mark || 0)));
    rows.forEach((r, ri) => {
      const y = 4 + ri * (barH + 4);
      el(svg, "text", { x: 4, y: y + 12 }, r.label);
      const g = el(svg, "g", { "data-row": ri, "data-label": r.label });
      let x0 = labelW;
      r.parts.forEach(([name, v], pi) => {
        const wSeg = (v / max) * plot;
        const rect = el(g, "rect", {
          x: x0, y: y, width: Math.max(0, wSeg), height: barH, fill: partColour(name, pi),
          "data-part": name, "data-value": String(v),
        });
        const share = sum(r) > 0 ? (100 * v) / sum(r) : 0;
        el(rect, "title", {}, r.label + ", " + name + ": " + fmt(v) + " " + unit +
           " (" + share.toFixed(1) + " %)");
        if (shares !== false && wSeg >= 34) {
          el(g, "text", { x: x0 + wSeg / 2, y: y + 12, "text-anchor": "middle",
                          style: "fill:#fff;pointer-events:none" }, share.toFixed(0) + "%");
        }
        x0 += wSeg;
      });
      if (r.mark !== undefined) {
        const mx = labelW + (r.mark / max) * plot;
        el(svg, "line", { x1: mx, x2: mx, y1: y - 2, y2: y + barH + 2, stroke: "#c0392b",
                          "stroke-width": 2, "data-mark": String(r.mark) });
      }
      const end = labelW + (Math.max(sum(r), r.mark || 0) / max) * plot;
      el(svg, "text", { x: end + 4, y: y + 12 }, fmt(sum(r)) + " " + unit +
         (r.mark !== undefined ? " (peak " + fmt(r.mark) + ")" : ""));
    });
    svg.setAttribute("width", w);
    svg.setAttribute("height", 8 + rows.length * (barH + 4));
  }
  // A legend: a swatch in each name's colour (partColour, as stacked() draws the segments) and
  // the name, appended to the element with id `id`.
  function legend(id, names) {
    const box = document.getElementById(id);
    names.forEach((name, i) => {
      const item = document.createElement("span");
      const swatch = document.createElement("i");
      swatch.style.background = partColour(name, i);
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(name));
      box.appendChild(item);
    });
  }
  const entries = (obj) => Object.keys(obj || {}).map((k) => [k, obj[k]])
    .filter(([, v]) => typeof v === "number").sort(byPartOrder);
