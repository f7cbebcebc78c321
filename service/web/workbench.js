/* VRAMwise answer workbench: an answer's scenario as what-if controls (`[data-field=NAME]`, each change
   recomputed through POST /v1/estimate, no LLM, no new chat turn), the memory over the step
   (`[data-chart=phases]`, one `[data-phase]` per phase of the Estimate) and a comparison drawn as bars
   (`[data-chart=compare]`, one `[data-option]` per option of Answer.asked). app.js calls it; it keeps no
   state of its own beyond its strings and the catalog lists. */
"use strict";

window.VRAMwiseWorkbench = (() => {
  const GIB = 1073741824; // 2**30 bytes: the GiB nvidia-smi and PyTorch report
  const PALETTE = ["#2f5bea", "#16a394", "#c77a12", "#8e5cd9", "#d43d67", "#2a8fc4", "#6f8f1f",
                   "#a8841a", "#5c6fd6", "#b0603a", "#2f9a6f", "#a1509c"];
  const OVERHEAD_COLOR = "#8d96ab";
  // the Scenario fields shown as controls, in order; `tasks`: shown only for these tasks (else always)
  const TRAINING = ["full_finetune", "pretrain", "freeze", "lora", "qlora", "ppo", "grpo", "dpo"];
  const FIELDS = [
    { name: "model", kind: "text", list: "models" },
    { name: "task", kind: "enum" },
    { name: "gpu", kind: "text", list: "gpus" },
    { name: "num_gpus", kind: "int" },
    { name: "batch_size", kind: "int" },
    { name: "seq_len", kind: "int" },
    { name: "weight_dtype", kind: "enum" },
    { name: "lora_rank", kind: "int", tasks: ["lora", "qlora"] },
    { name: "gradient_checkpointing", kind: "bool", tasks: TRAINING },
    { name: "zero_stage", kind: "enum", options: [0, 1, 2, 3], tasks: TRAINING },
    { name: "num_generations", kind: "int", tasks: ["grpo"] },
    { name: "engine", kind: "enum", tasks: ["inference"] },
    { name: "kv_dtype", kind: "enum", tasks: ["inference", "ppo", "grpo"] },
  ];
  // fields the catalog fills from the model: dropped when the model changes so they are filled again
  const MODEL_DERIVED = ["params", "architecture"];

  const wb = { strings: {}, enums: {}, lists: { models: [], gpus: [] }, lang: () => "en" };

  function s(key, vars) {
    const table = wb.strings[wb.lang()] || wb.strings.en || {};
    let text = table[key] ?? (wb.strings.en || {})[key] ?? key;
    if (typeof text !== "string") return text;
    for (const [k, v] of Object.entries(vars || {})) text = text.replaceAll(`{${k}}`, String(v));
    return text;
  }
  function named(group, key) {
    const table = s(group);
    return (table && typeof table === "object" && table[key]) || key.replaceAll("_", " ");
  }
  function gib(bytes) { return `${(bytes / GIB).toFixed(2)} GiB`; }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  /** Strings, the Scenario's enum values (from the OpenAPI schema) and the catalog ids, once. */
  async function load() {
    const get = (url) => fetch(url).then((r) => (r.ok ? r.json() : null)).catch(() => null);
    const [strings, openapi, models, gpus] = await Promise.all([
      get("/static/workbench-i18n.json"), get("/openapi.json"), get("/v1/catalog/models"), get("/v1/gpus"),
    ]);
    wb.strings = strings || {};
    const props = (((openapi || {}).components || {}).schemas || {}).Scenario?.properties || {};
    for (const [name, prop] of Object.entries(props)) {
      const values = (prop.anyOf || [prop]).flatMap((p) => p.enum || []);
      if (values.length) wb.enums[name] = values;
    }
    wb.lists.models = (models || []).map((m) => m.id);
    wb.lists.gpus = (gpus || []).map((g) => g.id);
    if (!document.getElementById("wb-list-models")) {
      for (const [key, ids] of Object.entries(wb.lists)) {
        const list = el("datalist", { id: `wb-list-${key}` });
        for (const id of ids) list.append(el("option", { value: id }));
        document.body.append(list);
      }
    }
  }
  const ready = load();

  // ---- what-if controls ------------------------------------------------------------------------------
  function shownValue(turn, name) {
    if (turn.pending && name in turn.pending) return turn.pending[name];
    const asked = turn.scenario ? turn.scenario[name] : undefined;
    if (asked !== undefined && asked !== null) return asked;
    const resolved = turn.estimate && turn.estimate.scenario ? turn.estimate.scenario[name] : undefined;
    return resolved === undefined ? null : resolved;
  }

  function parseValue(field, control) {
    if (field.kind === "bool") return control.checked;
    const raw = control.value.trim();
    if (raw === "") return null;
    if (field.kind === "int" || (field.kind === "enum" && field.options)) return /^-?\d+$/.test(raw) ? Number(raw) : raw;
    return raw;
  }

  function controlFor(turn, field, value, ctx) {
    const id = `wb-${ctx.index}-${field.name}`;
    const errorId = `${id}-error`;
    const error = turn.fieldErrors && turn.fieldErrors[field.name];
    const common = { id, "data-field": field.name, "aria-invalid": error ? "true" : null, "aria-describedby": error ? errorId : null };
    let control;
    if (field.kind === "bool") {
      control = el("input", { ...common, type: "checkbox" });
      control.checked = Boolean(value);
    } else if (field.kind === "enum") {
      control = el("select", common, el("option", { value: "", text: s("default") }));
      const values = field.options || wb.enums[field.name] || [];
      const all = value !== null && !values.includes(value) ? [value, ...values] : values;
      for (const v of all) control.append(el("option", { value: String(v), text: String(v) }));
      control.value = value === null ? "" : String(value);
    } else {
      const attrs = field.kind === "int" ? { inputmode: "numeric" } : { list: field.list ? `wb-list-${field.list}` : null };
      control = el("input", { ...common, type: "text", spellcheck: "false", autocomplete: "off", ...attrs });
      control.value = value === null ? "" : String(value);
    }
    control.addEventListener("change", () => recompute(turn, field, control, ctx));
    if (field.kind !== "bool" && field.kind !== "enum") {
      control.addEventListener("keydown", (e) => {
        if (e.key === "Enter") { e.preventDefault(); recompute(turn, field, control, ctx); }
      });
    }
    const label = el("label", { for: id, text: named("field_names", field.name) });
    const row = el("div", { class: `wb-field wb-${field.kind}` }, label, control);
    if (error) row.append(el("span", { class: "field-error", id: errorId, role: "alert", text: error }));
    return row;
  }

  /** The scenario after one change: the answer's (asked) scenario with the field set, null = default. */
  function edited(turn, name, value) {
    const next = { ...turn.scenario };
    if (value === null) delete next[name];
    else next[name] = value;
    if (name === "model") for (const k of MODEL_DERIVED) delete next[k];
    return next;
  }

  function recompute(turn, field, control, ctx) {
    const value = parseValue(field, control);
    const error = turn.fieldErrors && turn.fieldErrors[field.name];
    if (!error && value === shownValue(turn, field.name)) return null; // nothing changed
    const raw = field.kind === "bool" ? control.checked : control.value;
    return apply(turn, edited(turn, field.name, value), ctx, field.name, raw);
  }

  /** POST /v1/estimate of `scenario`; on success the turn shows it, on error the API's text sits next
      to the control `focusName` (which keeps the value typed, `raw`). */
  async function apply(turn, scenario, ctx, focusName, raw) {
    const ticket = (turn.wbTicket || 0) + 1;
    turn.wbTicket = ticket;
    let failure = null;
    let result = null;
    try {
      const res = await fetch("/v1/estimate", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(scenario),
      });
      const data = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
      if (res.ok) result = data;
      else failure = data.error || data.message || `HTTP ${res.status}`;
    } catch (exc) {
      failure = exc.message;
    }
    if (ticket !== turn.wbTicket) return; // a newer change answered later
    turn.fieldErrors = {};
    turn.pending = {};
    if (failure) {
      turn.fieldErrors[focusName] = failure;
      turn.pending[focusName] = raw;
    } else {
      if (!turn.originalScenario) turn.originalScenario = turn.scenario;
      turn.scenario = scenario;
      turn.estimate = result;
      turn.display = null; // the panel texts were the original scenario's
      turn.edited = scenario !== turn.originalScenario; // "back to the answer's scenario" ends the edit
    }
    rerender(turn, ctx, focusName);
    if (result) labels(turn, scenario, result, ctx, ticket);
  }

  function rerender(turn, ctx, focusName) {
    ctx.rerender();
    const again = focusName && turn.view && turn.view.root.querySelector(`[data-field="${focusName}"]`);
    if (again) again.focus();
  }

  /** The recomputed estimate's panel texts (component labels) in the page's language, after the figure:
      POST /v1/display of the same scenario; kept only if it is still the turn's latest change. */
  async function labels(turn, scenario, result, ctx, ticket) {
    const body = JSON.stringify({ scenario, language: wb.lang() === "zh" ? "zh" : "en" });
    const got = await fetch("/v1/display", { method: "POST", headers: { "Content-Type": "application/json" }, body })
      .then((r) => (r.ok ? r.json() : null)).catch(() => null);
    if (!got || ticket !== turn.wbTicket || got.estimate.per_gpu.total_bytes !== result.per_gpu.total_bytes) return;
    turn.display = got.display;
    const focused = document.activeElement && turn.view && turn.view.root.contains(document.activeElement)
      ? document.activeElement.dataset.field : null;
    rerender(turn, ctx, focused);
  }

  function controls(turn, ctx) {
    const task = shownValue(turn, "task");
    const box = el("fieldset", { class: "workbench", "data-workbench": "" },
      el("legend", { text: s("whatif") }),
      el("p", { class: "wb-hint", text: s("whatif_hint") }));
    const grid = el("div", { class: "wb-grid" });
    for (const field of FIELDS) {
      if (field.tasks && !field.tasks.includes(task)) continue;
      grid.append(controlFor(turn, field, shownValue(turn, field.name), ctx));
    }
    box.append(grid);
    if (turn.edited && turn.estimate) {
      const est = turn.estimate;
      box.append(el("p", { class: "wb-summary", "aria-live": "polite", "data-whatif-summary": "" , text: s("whatif_summary", {
        verdict: est.fits ? s("fits") : s("does_not_fit"), total: gib(est.per_gpu.total_bytes),
        capacity: gib(est.gpu.memory_bytes), gpu: est.gpu.name }) }));
      box.append(el("p", { class: "wb-note", text: s("edited") }));
    }
    const actions = el("div", { class: "wb-actions" });
    const askButton = el("button", { type: "button", class: "wb-ask", "data-action": "ask-about", text: s("ask_about") });
    askButton.addEventListener("click", () => ctx.ask(followUp(turn)));
    actions.append(askButton);
    if (turn.edited && turn.originalScenario) {
      const reset = el("button", { type: "button", class: "wb-reset", text: s("reset") });
      reset.addEventListener("click", () => apply(turn, turn.originalScenario, ctx, "model", null));
      actions.append(reset);
    }
    box.append(actions);
    return box;
  }

  /** The edited scenario as a question the chat understands (its parser reads these words). */
  function followUp(turn) {
    const sc = { ...(turn.estimate ? turn.estimate.scenario : {}), ...turn.scenario };
    const w = (key, vars) => {
      let text = s("question_words")[key] || key;
      for (const [k, v] of Object.entries(vars || {})) text = text.replaceAll(`{${k}}`, String(v));
      return text;
    };
    const parts = [`${sc.task || ""} ${sc.model || ""}`.trim()];
    if (sc.gpu) parts.push(`${w("on")} ${sc.num_gpus || 1}x ${sc.gpu}`);
    if (sc.batch_size) parts.push(`${w("batch")} ${sc.batch_size}`);
    if (sc.seq_len) parts.push(`${w("context")} ${sc.seq_len}`);
    if (sc.weight_dtype) parts.push(`${sc.weight_dtype} ${w("weights")}`);
    if (sc.lora_rank && ["lora", "qlora"].includes(sc.task)) parts.push(`${w("rank")} ${sc.lora_rank}`);
    if (sc.gradient_checkpointing === true) parts.push(w("checkpointing"));
    if (sc.gradient_checkpointing === false && TRAINING.includes(sc.task)) parts.push(w("no_checkpointing"));
    if (sc.zero_stage !== null && sc.zero_stage !== undefined && sc.zero_stage > 0) parts.push(w("zero", { n: sc.zero_stage }));
    if (sc.engine && sc.task === "inference") parts.push(w("engine", { engine: sc.engine }));
    if (sc.kv_dtype && sc.task === "inference") parts.push(w("kv", { dtype: sc.kv_dtype }));
    if (sc.num_generations && sc.task === "grpo") parts.push(w("generations", { n: sc.num_generations }));
    return `${w("lead")} ${parts.join(", ")}`;
  }

  return { ready, controls, followUp, strings: s, named, gib, el, setLanguage: (fn) => { wb.lang = fn; },
           palette: PALETTE, overheadColor: OVERHEAD_COLOR };
})();
