/* The Coach tab's Interview mode: POST /v1/coach/interviews starts one, each answer goes to
   POST /v1/coach/interviews/{id}/answers; the transcript grows on the page and the scorecard comes with the
   last answer (with a link to its Markdown export). Independent of the quiz (coach.js) and the chat
   (app.js): it only reads the page's language (localStorage "vramwise.lang"). */
"use strict";

(() => {
  const STORE_INTERVIEW = "vramwise.interview";
  const state = { strings: {}, lang: "en", id: null };
  const $ = (id) => document.getElementById(id);

  const { lang, s } = window.VRAMwiseCoachDom.strings(state);
  const { node, inline } = window.VRAMwiseCoachDom;
  function paragraphs(text) {
    return text.split("\n").filter((line) => line.trim()).map((line) => inline(node("p"), line));
  }
  async function call(path, body) {
    const r = await fetch(path, body === undefined ? {} : {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  function applyStrings() {
    $("coach-mode-quiz").textContent = s("mode_quiz");
    $("coach-mode-interview").textContent = s("mode_interview");
    $("interview-intro").textContent = s("intro");
    $("interview-level-label").textContent = s("level");
    $("interview-start").textContent = s("start");
    $("interview-submit").textContent = s("submit");
    $("interview-answer").placeholder = s("placeholder");
  }
  function showMode(which) {
    const on = which === "interview";
    $("interview-panel").hidden = !on;
    $("quiz-panel").hidden = on;
    $("coach-mode-interview").classList.toggle("active", on);
    $("coach-mode-quiz").classList.toggle("active", !on);
  }

  function ask(q) {
    const card = $("interview-question");
    const meta = node("p", { class: "coach-meta", text: s("step", { step: q.step, title: q.title }) });
    const follow = q.follow_up ? node("p", { class: "interview-follow", text: s("follow_up") }) : null;
    card.replaceChildren(...[meta, follow, ...paragraphs(q.text)].filter(Boolean));
    Object.assign(card.dataset, { step: q.step, topic: q.topic, followUp: String(Boolean(q.follow_up)) });
    card.hidden = false;
    $("interview-form").hidden = false;
    $("interview-answer").value = "";
    $("interview-answer").focus();
  }
  function logTurn(q, answer, result) {
    const turn = node("div", { class: "interview-turn", "data-step": q.step, "data-correct": String(result.grade.correct) });
    turn.append(node("p", { class: "coach-meta", text: s("step", { step: q.step, title: q.title }) + (q.follow_up ? ` · ${s("follow_up")}` : "") }));
    turn.append(...paragraphs(q.text), node("p", { class: "interview-answer", text: answer }), ...paragraphs(result.feedback));
    $("interview-log").append(turn);
  }
  function scorecard(card) {
    const box = $("interview-scorecard");
    const head = node("tr", {}, ...["topic", "answer", "figure", "formula", "grade"].map((k) => node("th", { text: s(k) })));
    const rows = card.topics.map((t) => node("tr", { "data-topic": t.topic, "data-grade": t.grade },
      node("td", { text: t.title }), node("td", { text: t.answer || "-" }), node("td", { text: t.figure || "-" }),
      node("td", { text: t.formula }), node("td", { class: `grade-${t.grade}`, text: s(t.grade) })));
    const study = node("ul", {}, ...card.study.map((i) => node("li", { "data-kb": i.kb }, node("strong", { text: i.title }), ` — ${i.kb_title} (prompts/${lang()}/kb/${i.kb}.md)`)));
    const link = node("a", { id: "interview-export", href: `/v1/coach/interviews/${state.id}/markdown`, download: `interview-${state.id}.md`, text: s("export") });
    box.replaceChildren(node("h2", { text: s("scorecard") }),
      node("p", { class: "coach-badge", text: s("overall", { level: card.level_text, score: card.score, points: card.points }) }),
      node("table", {}, node("thead", {}, head), node("tbody", {}, ...rows)),
      node("h3", { text: s("study") }), study, node("p", {}, link));
    Object.assign(box.dataset, { level: card.level, score: card.score, points: card.points });
    box.hidden = false;
  }

  async function start() {
    $("interview-log").replaceChildren();
    $("interview-scorecard").hidden = true;
    const started = await call("/v1/coach/interviews", { language: lang(), level: Number($("interview-level").value) });
    state.id = started.interview_id;
    state.question = started.question;
    localStorage.setItem(STORE_INTERVIEW, state.id);
    $("interview-panel").dataset.interviewId = state.id;
    $("interview-setting").textContent = s("setting", { model: started.model, gpu: started.gpu });
    ask(started.question);
  }
  async function answer(text) {
    const q = state.question;
    if (!q || !text.trim()) return;
    const result = await call(`/v1/coach/interviews/${state.id}/answers`, { answer: text });
    if (result.grade.correct === null) {  // nothing gradable read: the same question stays open
      $("interview-question").append(...paragraphs(result.feedback));
      return;
    }
    logTurn(q, text, result);
    state.question = result.next;
    if (result.next) ask(result.next);
    else {
      $("interview-question").hidden = true;
      $("interview-form").hidden = true;
      scorecard(result.scorecard);
    }
  }

  async function restore(id) {  // the interview of this browser, viewable later: its transcript and scorecard
    const r = await fetch(`/v1/coach/interviews/${id}`);
    if (!r.ok) { localStorage.removeItem(STORE_INTERVIEW); return; }
    const record = await r.json();
    state.id = record.interview_id;
    $("interview-panel").dataset.interviewId = state.id;
    $("interview-setting").textContent = s("setting", { model: record.model, gpu: record.gpu });
    const graded = record.turns.filter((t) => t.correct !== null);
    for (const t of graded) logTurn(t, t.answer, { grade: { correct: t.correct }, feedback: t.feedback || "" });
    const open = record.turns.find((t) => t.correct === null);
    state.question = open || null;
    if (open) ask(open);
    if (record.scorecard) scorecard(record.scorecard);
  }

  async function main() {
    state.strings = await (await fetch("/static/interview-i18n.json")).json();
    state.lang = (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
    applyStrings();
    $("coach-mode-quiz").addEventListener("click", () => showMode("quiz"));
    $("coach-mode-interview").addEventListener("click", () => showMode("interview"));
    $("interview-start").addEventListener("click", () => start());
    $("interview-form").addEventListener("submit", (e) => { e.preventDefault(); answer($("interview-answer").value); });
    $("interview-answer").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); answer($("interview-answer").value); }
    });
    for (const b of document.querySelectorAll("[data-lang]")) b.addEventListener("click", () => setTimeout(applyStrings, 0));
    const stored = localStorage.getItem(STORE_INTERVIEW);
    if (stored) await restore(stored);
    document.body.dataset.interviewReady = "true";
  }
  main();
})();
