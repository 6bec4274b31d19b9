// perfgate's trend dashboard: draws each page's charts from its JSON data block with uPlot (no inline script,
// no network: the page works offline and under a strict Content-Security-Policy).
"use strict";
(function () {
  const block = document.getElementById("perfgate-data");
  if (!block) { return; }
  const data = JSON.parse(block.textContent);
  const width = () => Math.max(320, Math.min(1100, document.body.clientWidth - 40));

  function changeMarks(chart, changes) {
    // Each change point: a vertical dashed line at its commit (red: regression, green: improvement). The gate's
    // verdict on the newest run (no change point can sit there yet): a dotted line labelled "gate".
    const ctx = chart.ctx;
    const top = chart.bbox.top, height = chart.bbox.height;
    ctx.save();
    ctx.lineWidth = 2;
    ctx.font = "12px system-ui, sans-serif";
    for (const change of changes) {
      const x = Math.round(chart.valToPos(change.x, "x", true));
      const color = change.direction === "regression" ? "#b3261e" : change.direction === "improvement" ? "#1a7f37" : "#8250df";
      ctx.strokeStyle = color;
      ctx.setLineDash(change.gate ? [2, 3] : [5, 4]);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      if (change.gate) {
        ctx.fillStyle = color;
        ctx.textAlign = "right";
        ctx.fillText("gate: " + change.direction, x - 4, top + 14);
      }
    }
    ctx.restore();
  }

  for (const metric of data.metrics) {
    const target = document.getElementById(metric.element);
    if (!target) { continue; }
    const commits = data.commits;
    const options = {
      width: width(), height: 260,
      scales: { x: { time: false } },
      axes: [
        { label: "commit", values: (u, ticks) => ticks.map((t) => (Number.isInteger(t) && commits[t] ? commits[t].slice(0, 7) : "")) },
        { label: metric.y_label, size: 110, labelGap: 4 },
      ],
      series: [
        { label: "commit", value: (u, v) => (v == null || !commits[v] ? "" : commits[v].slice(0, 12)) },
        { label: metric.metric, stroke: "#0969da", width: 2, points: { show: true, size: 5 } },
      ],
      hooks: { draw: [(chart) => changeMarks(chart, metric.changes)] },
    };
    new uPlot(options, [metric.x, metric.y], target);
    target.dataset.drawn = "true";
  }
})();
