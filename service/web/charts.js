/* VRAMwise charts beside an answer: the memory over the step (`[data-chart=phases]`, one `[data-phase]` per
   entry of Estimate.per_gpu.phases, the peak marked) and a comparison (`[data-chart=compare]`, one
   `[data-option]` per option of Answer.asked.options, each with its card's usable line). Plain HTML bars:
   readable by screen readers, no external code. Uses the workbench's strings and helpers. */
"use strict";

window.VRAMwiseCharts = (() => {
  const wb = window.VRAMwiseWorkbench;
  const { el, gib, strings: s, named } = wb;

  function pct(bytes, scale) { return `${Math.max(0, (bytes / scale) * 100).toFixed(3)}%`; }

  /** One colour per component name (and model role), the same in every bar of a chart. */
  function colorMap() {
    const seen = new Map();
    return (component) => {
      if (component.kind === "overhead") return wb.overheadColor;
      const key = `${component.name}/${component.model_role || ""}`;
      if (!seen.has(key)) seen.set(key, wb.palette[seen.size % wb.palette.length]);
      return seen.get(key);
    };
  }
  function componentLabel(c) {
    return c.label || c.name.replaceAll("_", " ") + (c.model_role ? ` (${c.model_role})` : "");
  }
  function segment(bytes, scale, color, label, attrs) {
    return el("span", { class: "bar-seg", style: `width:${pct(bytes, scale)};background:${color}`,
                        title: `${label}: ${gib(bytes)}`, ...attrs });
  }
  function line(bytes, scale, cls, label) {
    return el("span", { class: cls, style: `left:${pct(bytes, scale)}`, title: label, "aria-hidden": "true" });
  }

  /** The memory over the step: one row per phase, the live tensors plus the runtime overhead. */
  function phases(est) {
    const per = est.per_gpu;
    if (!per.phases || !per.phases.length) return null;
    const overhead = per.total_bytes - per.tensor_peak_bytes;
    const capacity = est.gpu.memory_bytes;
    const scale = Math.max(per.total_bytes, capacity) * 1.02;
    const color = colorMap();
    const fig = el("figure", { class: "wb-chart phases", "data-chart": "phases", "data-peak-phase": per.peak_phase });
    fig.append(el("figcaption", { class: "section-title", text: s("phases_title") }));
    const rows = el("ol", { class: "bar-rows" });
    for (const phase of per.phases) {
      const isPeak = phase.phase === per.peak_phase;
      const total = phase.tensor_bytes + overhead;
      const name = named("phase_names", phase.phase);
      const track = el("span", { class: "bar-track" });
      if (isPeak) { // at the peak the Estimate's components are exactly the live tensors: split the bar
        for (const c of est.components) {
          if (c.kind === "tensor" && c.bytes > 0) {
            track.append(segment(c.bytes, scale, color(c), componentLabel(c), { "data-component": c.name, "data-bytes": c.bytes }));
          }
        }
      } else {
        track.append(segment(phase.tensor_bytes, scale, "#6d86e8", name, { "data-bytes": phase.tensor_bytes }));
      }
      track.append(segment(overhead, scale, wb.overheadColor, s("overhead"), { "data-component": "overhead", "data-bytes": overhead }));
      track.append(line(capacity, scale, "bar-capacity", gib(capacity)));
      if (est.usable_bytes < capacity) track.append(line(est.usable_bytes, scale, "bar-usable", gib(est.usable_bytes)));
      rows.append(el("li", {
        class: `bar-row${isPeak ? " peak" : ""}`, "data-phase": phase.phase, "data-tensor-bytes": phase.tensor_bytes,
        "data-total-bytes": total, "data-peak": String(isPeak),
        "aria-label": `${name}: ${gib(total)}${isPeak ? ` (${s("peak")})` : ""}`,
      },
      el("span", { class: "bar-name" }, name, isPeak ? el("span", { class: "peak-badge", text: s("peak") }) : null),
      track,
      el("span", { class: "bar-value", text: gib(total) })));
    }
    fig.append(rows);
    fig.append(el("p", { class: "wb-caption", text: s("phases_caption") }));
    return fig;
  }

  /** A comparison answer: one bar per option (its per-GPU total, split into components), each with its
      own card's capacity and usable line. */
  function compare(asked) {
    const options = (asked && asked.options) || [];
    if (!options.length) return null;
    const scale = Math.max(...options.map((o) => Math.max(o.estimate.per_gpu.total_bytes, o.estimate.gpu.memory_bytes))) * 1.02;
    const color = colorMap();
    const fig = el("figure", { class: "wb-chart compare", "data-chart": "compare" });
    fig.append(el("figcaption", { class: "section-title", text: s("compare_title") }));
    const rows = el("ol", { class: "bar-rows" });
    const legend = new Map();
    options.forEach((option, i) => {
      const est = option.estimate;
      const total = est.per_gpu.total_bytes;
      const track = el("span", { class: "bar-track" });
      for (const c of est.components) {
        if (c.bytes <= 0) continue;
        const label = c.kind === "overhead" ? s("overhead") : componentLabel(c);
        const swatch = color(c);
        legend.set(label, swatch);
        track.append(segment(c.bytes, scale, swatch, label, { "data-component": c.name, "data-bytes": c.bytes }));
      }
      track.append(line(est.gpu.memory_bytes, scale, "bar-capacity", gib(est.gpu.memory_bytes)));
      track.append(line(est.usable_bytes, scale, "bar-usable", s("usable", { value: gib(est.usable_bytes) })));
      const verdict = est.fits ? "✓" : "✗";
      rows.append(el("li", {
        class: `bar-row ${est.fits ? "fits" : "no-fit"}${i === asked.winner ? " winner" : ""}`,
        "data-option": option.label, "data-total-bytes": total,
        "data-usable-bytes": est.usable_bytes, "data-fits": String(est.fits),
        "aria-label": `${option.label}: ${gib(total)}, ${s("usable", { value: gib(est.usable_bytes) })} (${est.gpu.name})`,
      },
      el("span", { class: "bar-name", text: `${verdict} ${option.label}` }),
      track,
      el("span", { class: "bar-value", text: `${gib(total)} / ${gib(est.usable_bytes)}` })));
    });
    fig.append(rows);
    const keys = el("ul", { class: "legend" });
    for (const [label, swatch] of legend) {
      keys.append(el("li", {}, el("span", { class: "swatch", style: `background:${swatch}` }), el("span", { text: label })));
    }
    fig.append(keys, el("p", { class: "wb-caption", text: s("compare_caption") }));
    return fig;
  }

  return { phases, compare };
})();
