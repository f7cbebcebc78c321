/* VRAMwise chat page: streams POST /v1/chat (Server-Sent Events over fetch), draws the memory
   chart as inline SVG, keeps the conversation id in localStorage. No external code. */
"use strict";

(() => {
  const GIB = 1073741824; // 2**30: what nvidia-smi and PyTorch report as "GiB"
  const PALETTE = ["#2f5bea", "#16a394", "#f29d38", "#8e5cd9", "#e5527a", "#3fa7dd", "#9bbf3b",
                   "#d4a72c", "#5c6fd6", "#c06c45", "#4db38a", "#b65fb0"];
  const OVERHEAD_COLOR = "#aab2c5";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const STORE_CID = "vramwise.conversation";
  const STORE_RECENT = "vramwise.recent";
  const STORE_LANG = "vramwise.lang";

  const state = {
    lang: localStorage.getItem(STORE_LANG) || ((navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en"),
    strings: {},
    conversationId: localStorage.getItem(STORE_CID),
    busy: false,
    controller: null,
    turns: [], // {question, text, scenario, estimate, display, notices, error, agent, done, view}
  };

  const $ = (id) => document.getElementById(id);

  // ---- helpers ------------------------------------------------------------------------------------
  function t(key, vars) {
    const table = state.strings[state.lang] || state.strings.en || {};
    let s = table[key] ?? (state.strings.en || {})[key] ?? key;
    if (typeof s !== "string") return s;
    for (const [k, v] of Object.entries(vars || {})) s = s.replaceAll(`{${k}}`, String(v));
    return s;
  }
  function gib(bytes) { return `${(bytes / GIB).toFixed(2)} GiB`; }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function prettyName(name) { return name.replaceAll("_", " "); }
  function plain(text) { return text.replaceAll("**", ""); }
  /** The display entry (panel texts in the answer's language) for item i of an estimate list, when
      the server sent one that runs alongside it; null means "use the raw Estimate field". */
  function shown(display, key, items, i) {
    const list = display && display[key];
    return list && list.length === items.length ? list[i] : null;
  }
  function agentName(agent) {
    const names = t("agent_names");
    return (names && typeof names === "object" && names[agent]) || agent;
  }

  // ---- the answer text: a small, safe Markdown subset (markdown.js) --------------------------------------
  function renderMarkdown(text) { return window.VRAMwiseMarkdown.render(text); }
  function setAnswerText(node, text) {
    node.replaceChildren(renderMarkdown(text));
  }

  // ---- language -------------------------------------------------------------------------------------
  async function loadStrings() {
    const res = await fetch("/static/i18n.json");
    state.strings = await res.json();
  }
  function applyLanguage(lang) {
    state.lang = lang === "zh" ? "zh" : "en";
    localStorage.setItem(STORE_LANG, state.lang);
    document.documentElement.lang = state.lang === "zh" ? "zh-CN" : "en";
    for (const b of document.querySelectorAll(".lang-toggle button")) {
      b.classList.toggle("active", b.dataset.lang === state.lang);
    }
    for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
    for (const node of document.querySelectorAll("[data-i18n-placeholder]")) {
      node.setAttribute("placeholder", t(node.dataset.i18nPlaceholder));
    }
    renderExamples();
    for (const turn of state.turns) renderTurn(turn);
    renderHistory();
  }
  function renderExamples() {
    const box = $("examples");
    box.replaceChildren();
    for (const q of t("examples") || []) {
      box.append(el("button", { type: "button", text: q, onclick: () => ask(q) }));
    }
  }

  // ---- Server-Sent Events over fetch ----------------------------------------------------------------
  async function* sseEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let event = "message";
    let data = [];
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        const lines = buffer.split(/\r\n|\r|\n/);
        buffer = lines.pop(); // an incomplete line waits for more bytes
        for (const line of lines) {
          if (line === "") {
            if (data.length) yield { event, data: data.join("\n") };
            event = "message";
            data = [];
          } else if (line.startsWith(":")) {
            // comment / keep-alive ping
          } else {
            const i = line.indexOf(":");
            const field = i < 0 ? line : line.slice(0, i);
            let val = i < 0 ? "" : line.slice(i + 1);
            if (val.startsWith(" ")) val = val.slice(1);
            if (field === "event") event = val;
            else if (field === "data") data.push(val);
          }
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  // ---- asking ----------------------------------------------------------------------------------------
  async function ask(question) {
    question = (question || "").trim();
    if (!question || state.busy) return;
    $("welcome").hidden = true;
    $("question").value = "";
    const turn = { question, text: "", scenario: null, estimate: null, display: null, notices: [], error: null, agent: null, done: false };
    state.turns.push(turn);
    renderTurn(turn);
    renderHistory();
    setBusy(true);
    state.controller = new AbortController();
    try {
      const body = { message: question };
      if (state.conversationId) body.conversation_id = state.conversationId;
      const res = await fetch("/v1/chat", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal: state.controller.signal,
      });
      if (!res.ok) {
        const err = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
        if (res.status === 404 && err.field === "conversation_id") setConversation(null);
        turn.error = err;
      } else {
        for await (const ev of sseEvents(res)) {
          const payload = JSON.parse(ev.data);
          if (handleEvent(turn, ev.event, payload)) break; // terminal event: stop reading
        }
      }
    } catch (exc) {
      if (exc.name !== "AbortError") turn.error = { error: t("network_error", { message: exc.message }) };
    } finally {
      turn.done = true;
      state.controller = null;
      setBusy(false);
      renderTurn(turn);
      renderHistory();
      $("question").focus();
    }
  }

  /** Applies one event to the turn; returns true on the terminal event (done or error). */
  function handleEvent(turn, name, payload) {
    switch (name) {
      case "meta":
        setConversation(payload.conversation_id, turn.question);
        turn.agent = payload.agent;
        break;
      case "scenario":
        turn.scenario = payload;
        break;
      case "estimate":
        turn.estimate = payload;
        turn.display = null; // its panel texts follow in a `display` event
        break;
      case "display":
        turn.display = payload;
        break;
      case "asked":
        turn.asked = payload.asked;
        break;
      case "token":
        turn.text += payload.text;
        updateText(turn);
        return false;
      case "notice":
        turn.notices.push(payload.message);
        break;
      case "done":
        turn.text = payload.answer;
        turn.summary = payload.estimate ? payload.summary || "" : "";
        turn.agent = payload.agent || turn.agent;
        if (payload.scenario) turn.scenario = turn.scenario || payload.scenario;
        if (payload.estimate) turn.estimate = payload.estimate;
        if (payload.display) turn.display = payload.display;
        if (payload.asked) turn.asked = payload.asked;
        return true;
      case "error":
        turn.error = payload;
        return true;
      default:
        return false;
    }
    renderTurn(turn);
    return false;
  }

  function setBusy(busy) {
    state.busy = busy;
    $("send").disabled = busy;
  }

  function setConversation(id, title) {
    state.conversationId = id;
    if (!id) { localStorage.removeItem(STORE_CID); renderRecent(); return; }
    localStorage.setItem(STORE_CID, id);
    const recent = readRecent().filter((r) => r.id !== id);
    const old = readRecent().find((r) => r.id === id);
    recent.unshift({ id, title: (old && old.title) || (title || id).slice(0, 80) });
    localStorage.setItem(STORE_RECENT, JSON.stringify(recent.slice(0, 12)));
    renderRecent();
  }
  function readRecent() {
    try { return JSON.parse(localStorage.getItem(STORE_RECENT) || "[]"); } catch { return []; }
  }

  // ---- rendering a turn ----------------------------------------------------------------------------------
  function renderTurn(turn) {
    if (!turn.view) {
      const root = el("article", { class: "turn" });
      turn.view = { root };
      $("transcript").append(root);
    }
    const root = turn.view.root;
    root.replaceChildren();
    root.append(el("div", { class: "bubble-user", "data-role": "user-message", text: turn.question }));
    const card = el("div", { class: "card answer-card" });
    card.append(el("div", { class: "who" },
      el("span", { text: t("assistant") }),
      turn.agent ? el("span", { class: "agent", "data-agent": turn.agent, text: t("answered_by", { agent: agentName(turn.agent) }) }) : null));
    for (const n of turn.notices) card.append(el("div", { class: "notice", text: `${t("notice")}: ${n}` }));
    if (turn.estimate) card.append(renderEstimate(turn.estimate, turn.display));
    if (turn.asked && turn.asked.kind === "compare" && window.VRAMwiseCharts) {
      const drawn = window.VRAMwiseCharts.compare(turn.asked); // workbench: charts.js
      if (drawn) card.append(drawn);
    }
    const text = el("div", { class: "answer-text" + (turn.done ? "" : " streaming") });
    const cut = turn.done && turn.summary ? turn.text.indexOf(turn.summary) : -1;
    if (cut >= 0) {
      // the short answer first; the full cited breakdown collapsed under it
      const end = cut + turn.summary.length;
      setAnswerText(text, turn.text.slice(0, end));
      const more = el("details", { class: "answer-detail" }, el("summary", { text: t("show_formulas") }));
      const body = el("div", { class: "answer-detail-text" });
      setAnswerText(body, turn.text.slice(end).trim());
      more.append(body);
      turn.view.text = text;
      card.append(text, more);
    } else {
      if (turn.text) setAnswerText(text, turn.text);
      else text.textContent = turn.done ? "" : t("thinking");
      turn.view.text = text;
      card.append(text);
    }
    if (turn.scenario && turn.estimate && turn.done && window.VRAMwiseWorkbench) { // what-if controls: workbench.js
      const index = state.turns.indexOf(turn);
      card.append(window.VRAMwiseWorkbench.controls(turn, { index, rerender: () => renderTurn(turn), ask }));
    }
    if (turn.error) card.append(renderError(turn.error));
    if (turn.interrupted) { // a stored turn cut off before its answer finished: offer to ask it again
      const again = el("button", { type: "button", class: "ask-again", text: t("ask_again") });
      again.addEventListener("click", () => ask(turn.question));
      card.append(el("div", { class: "notice interrupted", text: t("interrupted") }, again));
    }
    if (turn.estimate && turn.estimate.suggestions && turn.estimate.suggestions.length) {
      card.append(renderSuggestions(turn.estimate, turn.display));
    }
    if (turn.estimate && turn.estimate.assumptions && turn.estimate.assumptions.length) {
      card.append(renderAssumptions(turn.estimate.assumptions, turn.display));
    }

    if (turn.scenario) card.append(renderScenario(turn.scenario));
    root.append(card);
    if (turn.done) root.dataset.done = "true";
    scrollDown();
  }

  function updateText(turn) {
    if (!turn.view || !turn.view.text) return renderTurn(turn);
    setAnswerText(turn.view.text, turn.text);
    scrollDown();
  }

  function scrollDown() {
    const box = $("transcript");
    box.scrollTop = box.scrollHeight;
  }

  function renderError(err) {
    let msg = err.error || err.message || JSON.stringify(err);
    const missing = (err.suggestions || []).filter((x) => !msg.includes(x));
    if (missing.length) msg += `\n→ ${missing.join(", ")}`;
    return el("div", { class: "error-box", role: "alert", text: `${t("error")}: ${msg}` });
  }

  function renderEstimate(est, display) {
    const box = el("div", { class: "estimate" });
    const total = est.per_gpu.total_bytes;
    const capacity = est.gpu.memory_bytes;
    const verdict = el("div", {
      class: "verdict",
      "data-fits": String(est.fits),
      "data-total-bytes": String(total),
      "data-capacity-bytes": String(capacity),
    });
    verdict.append(el("span", { class: `badge ${est.fits ? "fits" : "no-fit"}`, text: est.fits ? t("fits") : t("does_not_fit"),
                                title: display && display.verdict ? plain(display.verdict) : null }));
    const [before, after] = t("total_of", { capacity: gib(capacity), gpu: est.gpu.name }).split("{total}");
    verdict.append(el("span", { class: "totals" }, before, el("span", { "data-figure": "per_gpu_total", text: gib(total) }), after));
    verdict.append(el("span", { class: "sub", text: t("per_gpu") }));
    const headroom = est.headroom_bytes;
    verdict.append(el("span", { class: "sub", text: headroom >= 0 ? t("headroom", { value: gib(headroom) }) : t("over_by", { value: gib(-headroom) }) }));
    if (est.min_gpus && !est.fits) verdict.append(el("span", { class: "sub", text: t("min_gpus", { n: est.min_gpus, gpu: est.gpu.name }) }));
    box.append(verdict);
    box.append(el("div", { class: "section-title", text: t("components") }));
    box.append(drawChart(est, display));
    const phases = window.VRAMwiseCharts && window.VRAMwiseCharts.phases(est); // workbench: charts.js
    if (phases) box.append(phases);
    return box;
  }

  /** Stacked horizontal bar of the components, with the card's capacity (and usable) line. */
  function drawChart(est, display) {
    const W = 860, X0 = 10, X1 = W - 10, BAR_Y = 34, BAR_H = 36;
    const total = est.per_gpu.total_bytes;
    const capacity = est.gpu.memory_bytes;
    const usable = est.usable_bytes;
    const scaleMax = Math.max(total, capacity) * 1.04;
    const x = (bytes) => X0 + (bytes / scaleMax) * (X1 - X0);
    const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} 104`, role: "img", "aria-label": t("components") });
    chart.append(svg("rect", { x: X0, y: BAR_Y, width: X1 - X0, height: BAR_H, fill: "#f0f2f6", rx: 4, class: "track" }));
    const legend = el("ul", { class: "legend" });
    let offset = 0;
    let colorIndex = 0;
    est.components.forEach((c, i) => {
      if (c.bytes <= 0) return;
      const color = c.kind === "overhead" ? OVERHEAD_COLOR : PALETTE[colorIndex++ % PALETTE.length];
      const d = shown(display, "components", est.components, i);
      const label = d && d.name === c.name ? d.label : c.label || prettyName(c.name) + (c.model_role ? ` (${c.model_role})` : "");
      const formula = d && d.name === c.name && d.formula ? d.formula : c.substituted;
      const rect = svg("rect", {
        x: x(offset), y: BAR_Y, width: Math.max(1, x(offset + c.bytes) - x(offset)), height: BAR_H,
        fill: color, class: "component", "data-name": c.name, "data-bytes": c.bytes,
        stroke: "#ffffff", "stroke-width": 1,
      });
      rect.append(svg("title", {}, `${label}: ${gib(c.bytes)}\n${formula}\n${c.source}`));
      chart.append(rect);
      offset += c.bytes;
      legend.append(el("li", {},
        el("span", { class: "swatch", style: `background:${color}` }),
        el("span", { text: label }),
        el("span", { class: "value", text: gib(c.bytes) })));
    });
    // capacity and usable lines
    const capX = x(capacity);
    chart.append(svg("line", { x1: capX, x2: capX, y1: BAR_Y - 12, y2: BAR_Y + BAR_H + 8, stroke: "#c2352b", "stroke-width": 2, class: "capacity-line" }));
    chart.append(svg("text", { x: capX, y: BAR_Y - 16, "text-anchor": capX > W * 0.8 ? "end" : "middle", class: "capacity-label", fill: "#c2352b" }, t("capacity", { value: gib(capacity) })));
    if (usable < capacity) {
      const uX = x(usable);
      chart.append(svg("line", { x1: uX, x2: uX, y1: BAR_Y - 4, y2: BAR_Y + BAR_H + 4, stroke: "#c2352b", "stroke-width": 1, "stroke-dasharray": "4 3", opacity: 0.7 }));
    }
    // axis ticks in GiB
    const step = niceStep(scaleMax / GIB);
    for (let v = 0; v * GIB <= scaleMax; v += step) {
      const tx = x(v * GIB);
      chart.append(svg("line", { x1: tx, x2: tx, y1: BAR_Y + BAR_H + 12, y2: BAR_Y + BAR_H + 16, stroke: "#b8bfcc" }));
      chart.append(svg("text", { x: tx, y: BAR_Y + BAR_H + 28, "text-anchor": v === 0 ? "start" : tx > X1 - 24 ? "end" : "middle" }, `${v} GiB`));
    }
    legend.append(el("li", { class: "line-key" },
      el("span", { class: "swatch line", style: "border-left: 2px solid #c2352b" }),
      el("span", { text: t("capacity_key") }),
      el("span", { class: "value", text: gib(capacity) })));
    if (usable < capacity) {
      legend.append(el("li", { class: "line-key" },
        el("span", { class: "swatch line", style: "border-left: 2px dashed #c2352b" }),
        el("span", { text: t("usable_key", { pct: Math.round((est.safety_margin || 0) * 100) }) }),
        el("span", { class: "value", text: gib(usable) })));
    }
    const wrap = el("div", { class: "chart-wrap" });
    wrap.append(chart, legend);
    return wrap;
  }

  function niceStep(maxGiB) {
    const raw = maxGiB / 6;
    const pow = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
    for (const m of [1, 2, 5, 10]) if (raw <= m * pow) return m * pow;
    return 10 * pow;
  }

  function renderSuggestions(est, display) {
    const box = el("div", { class: "suggestions" });
    box.append(el("div", { class: "section-title", text: t("suggestions") }));
    const list = el("ul", { class: "list" });
    est.suggestions.forEach((s, i) => {
      const d = shown(display, "suggestions", est.suggestions, i);
      list.append(el("li", {},
        el("span", { class: s.fits ? "fits-yes" : "fits-no", text: s.fits ? "✓ " : "✗ " }),
        el("span", { class: "change", text: d ? d.change : s.change }),
        el("span", { text: ` — ${t("suggestion_total", { value: gib(s.total_bytes) })}${t("list_sep")}${t("on_gpus", { n: s.num_gpus })}` }),
        d && d.tradeoffs ? el("span", { class: "tradeoffs", text: d.tradeoffs }) : null));
    });
    box.append(list);
    return box;
  }

  function renderAssumptions(assumptions, display) {
    const box = el("div", { class: "assumptions" });
    box.append(el("div", { class: "section-title", text: t("assumptions") }));
    const list = el("ul", { class: "list" });
    assumptions.forEach((a, i) => {
      const d = shown(display, "assumptions", assumptions, i);
      const field = d && d.field === a.field ? d : null;
      list.append(el("li", { "data-assumption": a.field },
        el("span", { class: "field", title: a.field, text: field ? `${field.label} = ${field.value}` : `${a.field} = ${JSON.stringify(a.value)}` }), " ",
        el("span", { class: "reason", text: field ? field.reason : a.reason })));
    });
    box.append(list);
    return box;
  }

  function renderScenario(scenario) {
    const json = JSON.stringify(scenario, null, 2);
    const pre = el("pre", { class: "scenario-json", text: json });
    const copy = el("button", { type: "button", class: "copy", text: t("copy") });
    copy.addEventListener("click", async () => {
      try { await navigator.clipboard.writeText(json); }
      catch {
        const range = document.createRange(); range.selectNodeContents(pre);
        const sel = getSelection(); sel.removeAllRanges(); sel.addRange(range); document.execCommand("copy");
      }
      copy.textContent = t("copied");
      setTimeout(() => { copy.textContent = t("copy"); }, 1500);
    });
    return el("details", { class: "scenario" }, el("summary", { text: t("scenario") }), el("div", { class: "json-wrap" }, copy, pre));
  }

  // ---- sidebar ------------------------------------------------------------------------------------------
  function renderHistory() {
    const list = $("history");
    list.replaceChildren();
    state.turns.forEach((turn, i) => {
      list.append(el("li", { title: turn.question, onclick: () => turn.view && turn.view.root.scrollIntoView({ behavior: "smooth" }) },
        el("span", { class: "n", text: `${i + 1}.` }), turn.question.length > 70 ? `${turn.question.slice(0, 70)}…` : turn.question));
    });
    $("history-empty").hidden = state.turns.length > 0;
  }

  function renderRecent() {
    const list = $("recent");
    list.replaceChildren();
    for (const r of readRecent()) {
      list.append(el("li", { class: r.id === state.conversationId ? "current" : "", title: r.title, onclick: () => openConversation(r.id) },
        r.title.length > 60 ? `${r.title.slice(0, 60)}…` : r.title));
    }
  }

  function newConversation() {
    if (state.controller) state.controller.abort();
    state.turns = [];
    setConversation(null);
    for (const node of document.querySelectorAll(".turn")) node.remove();
    $("welcome").hidden = false;
    renderHistory();
    $("question").focus();
  }

  /** Reopen a stored conversation: its turns, and each turn's chart re-estimated from its scenario. */
  async function openConversation(id) {
    if (state.busy) return;
    const res = await fetch(`/v1/conversations/${encodeURIComponent(id)}`);
    if (!res.ok) {
      localStorage.setItem(STORE_RECENT, JSON.stringify(readRecent().filter((r) => r.id !== id)));
      if (state.conversationId === id) setConversation(null);
      renderRecent();
      return;
    }
    const conv = await res.json();
    for (let page = conv; page.next_cursor; ) {  // the history comes a page at a time
      const more = await fetch(`/v1/conversations/${encodeURIComponent(id)}?limit=500&cursor=${encodeURIComponent(page.next_cursor)}`);
      if (!more.ok) break;
      page = await more.json();
      conv.turns.push(...page.turns);
    }
    newConversation();
    setConversation(conv.conversation_id);
    $("welcome").hidden = conv.turns.length > 0;
    for (const stored of conv.turns) {
      const summary = stored.scenario ? window.VRAMwiseMarkdown.restoredSummary(stored.answer) : ""; // breakdown collapsed
      const turn = { question: stored.question, text: stored.answer, summary, scenario: stored.scenario, estimate: null,
                     display: null, notices: [], error: null, agent: stored.agent, done: true,
                     interrupted: stored.status === "interrupted" || stored.status === "in_progress" };
      state.turns.push(turn);
      renderTurn(turn);
      if (stored.scenario) { // the estimate again, with its panel texts in the turn's language
        const body = { scenario: stored.scenario, language: stored.language === "zh" ? "zh" : "en" };
        fetch("/v1/display", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) })
          .then((r) => (r.ok ? r.json() : null))
          .then((got) => { if (got) { turn.estimate = got.estimate; turn.display = got.display; renderTurn(turn); } })
          .catch(() => {});
      }
    }
    renderHistory();
  }

  // ---- wiring ---------------------------------------------------------------------------------------------
  async function main() {
    await loadStrings();
    if (window.VRAMwiseWorkbench) { // the workbench's strings follow the page's language
      window.VRAMwiseWorkbench.setLanguage(() => state.lang);
      await window.VRAMwiseWorkbench.ready;
    }
    applyLanguage(state.lang);
    renderRecent();
    $("composer").addEventListener("submit", (e) => { e.preventDefault(); ask($("question").value); });
    $("question").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); ask($("question").value); }
    });
    $("new-conversation").addEventListener("click", newConversation);
    for (const b of document.querySelectorAll(".lang-toggle button")) {
      b.addEventListener("click", () => applyLanguage(b.dataset.lang));
    }
    if (state.conversationId) openConversation(state.conversationId).catch(() => {});
    document.body.dataset.ready = "true";
  }

  main();
})();
