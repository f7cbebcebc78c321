/* The Coach tab: questions from POST /v1/coach/questions, answers graded by POST /v1/coach/answers,
   the breakdown drawn as an SVG bar of the estimator's components. Independent of the chat code (app.js):
   it only reads the page's language (localStorage "vramwise.lang" and the EN/中文 buttons). */
"use strict";

(() => {
  const GIB = 1073741824;
  const PALETTE = ["#2f5bea", "#16a394", "#f29d38", "#8e5cd9", "#e5527a", "#3fa7dd", "#9bbf3b",
                   "#d4a72c", "#5c6fd6", "#c06c45", "#4db38a", "#b65fb0"];
  const OVERHEAD = "#aab2c5";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const STORE_SESSION = "vramwise.coach.session";
  const coach = { strings: {}, lang: "en", sessionId: localStorage.getItem(STORE_SESSION), question: null,
                  topics: {}, score: { asked: 0, correct: 0 }, graded: false };
  const $ = (id) => document.getElementById(id);

  const { lang, s } = window.VRAMwiseCoachDom.strings(coach);
  const { node, inline } = window.VRAMwiseCoachDom;
  function render(text) {
    const root = document.createDocumentFragment();
    let list = null;
    for (const line of text.split("\n")) {
      if (line.startsWith("- ")) {
        if (!list) { list = node("ul"); root.append(list); }
        list.append(inline(node("li"), line.slice(2)));
      } else {
        list = null;
        if (line.trim()) root.append(inline(node("p"), line));
      }
    }
    return root;
  }
  async function post(path, body) {
    const r = await fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  function applyStrings() {
    $("tab-chat").textContent = s("tab_chat");
    $("tab-coach").textContent = s("tab_coach");
    $("coach-title").textContent = s("coach_title");
    $("coach-intro").textContent = s("coach_intro");
    $("coach-topic-label").textContent = s("topic");
    $("coach-next").textContent = s("next");
    $("coach-submit").textContent = coach.graded ? s("next") : s("submit");
    $("coach-hint").textContent = s("hint");
    $("coach-answer").placeholder = s("answer_placeholder");
    $("coach-answer").setAttribute("aria-label", s("answer_label"));
    setScore(coach.score);
    if (coach.question) showQuestion(coach.question);
  }
  async function loadTopics() {
    const topics = await (await fetch(`/v1/coach/topics?language=${lang()}`)).json();
    const select = $("coach-topic");
    const current = select.value;
    select.replaceChildren(node("option", { value: "", text: s("adaptive") }),
      ...topics.map((t) => node("option", { value: t.id, text: t.title })));
    select.value = current;
    coach.topics = Object.fromEntries(topics.map((t) => [t.id, t.title]));
    if (coach.question) showQuestion(coach.question);
  }
  function showTab(which) {
    const coachOn = which === "coach";
    $("coach-view").hidden = !coachOn;
    document.querySelector(".layout").hidden = coachOn;
    $("tab-coach").classList.toggle("active", coachOn);
    $("tab-chat").classList.toggle("active", !coachOn);
    if (coachOn && !coach.question) nextQuestion();
  }
  function setScore(score) {
    coach.score = score;
    $("coach-score").textContent = s("score", score);
    $("coach-score").dataset.asked = score.asked;
    $("coach-score").dataset.correct = score.correct;
  }

  async function nextQuestion() {
    const body = { language: lang() };
    const topic = $("coach-topic").value;
    if (topic) body.topic = topic;
    if (coach.sessionId) body.session_id = coach.sessionId;
    let q;
    try { q = await post("/v1/coach/questions", body); }
    catch (e) { if (coach.sessionId) { coach.sessionId = null; return nextQuestion(); } throw e; }
    coach.question = q;
    coach.sessionId = q.session_id;
    localStorage.setItem(STORE_SESSION, q.session_id);
    setGraded(false);
    $("coach-result").hidden = true;
    showQuestion(q);
    $("coach-answer").value = "";
    $("coach-answer").focus();
  }
  /** The question card: the topic's title (not its id), the difficulty, the text. */
  function showQuestion(q) {
    const card = $("coach-question");
    const topic = coach.topics[q.topic] || q.topic;
    card.replaceChildren(node("p", { class: "coach-meta", text: `${topic} · ${s("difficulty", { d: q.difficulty })}` }), render(q.text));
    card.dataset.questionId = q.question_id;
    card.dataset.quantity = q.quantity;
    card.dataset.topic = q.topic;
  }
  /** After a grade the Check button becomes "New question": answering again moves on, never nothing. */
  function setGraded(graded) {
    coach.graded = graded;
    $("coach-submit").textContent = graded ? s("next") : s("submit");
    $("coach-submit").dataset.graded = String(graded);
  }

  function chart(components) {
    const total = components.reduce((a, c) => a + c.bytes, 0);
    const box = node("div");
    if (!total) return box;
    const svgEl = document.createElementNS(SVG_NS, "svg");
    svgEl.setAttribute("class", "coach-chart");
    svgEl.setAttribute("viewBox", "0 0 1000 40");
    svgEl.setAttribute("preserveAspectRatio", "none");
    const legend = node("ul", { class: "coach-legend" });
    let x = 0;
    components.forEach((c, i) => {
      const w = (c.bytes / total) * 1000;
      const color = c.kind === "overhead" ? OVERHEAD : PALETTE[i % PALETTE.length];
      const rect = document.createElementNS(SVG_NS, "rect");
      for (const [k, v] of Object.entries({ x, y: 0, width: Math.max(w, 0.5), height: 40, fill: color, class: "component", "data-bytes": c.bytes, "data-name": c.name })) rect.setAttribute(k, String(v));
      const title = document.createElementNS(SVG_NS, "title");
      title.textContent = `${c.label}: ${(c.bytes / GIB).toFixed(2)} GiB`;
      rect.append(title);
      svgEl.append(rect);
      const dot = node("i"); dot.style.background = color;
      legend.append(node("li", {}, dot, `${c.label} ${(c.bytes / GIB).toFixed(2)} GiB`));
      x += w;
    });
    box.append(svgEl, legend);
    return box;
  }

  async function submit(answerText) {
    if (coach.graded) return nextQuestion(); // the question is graded: the next one
    const q = coach.question;
    if (!q || !answerText.trim()) return;
    const a = await post("/v1/coach/answers", { session_id: q.session_id, question_id: q.question_id, answer: answerText });
    const result = $("coach-result");
    result.hidden = false;
    result.dataset.correct = a.correct === null ? "none" : String(a.correct);
    // the explanation opens with the verdict ("✓ Correct."): no second badge above it
    result.replaceChildren(...[node("div", { class: "coach-explanation" }, render(a.explanation)), a.components.length ? chart(a.components) : null,
      a.correct === null ? null : node("p", { class: "coach-next-hint", text: s("graded_next") })].filter(Boolean));
    setScore(a.score);
    if (a.correct !== null) setGraded(true);
  }

  async function main() {
    coach.strings = await (await fetch("/static/coach-i18n.json")).json();
    coach.lang = (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
    applyStrings();
    await loadTopics();
    setScore({ asked: 0, correct: 0 });
    if (coach.sessionId) {
      const r = await fetch(`/v1/coach/sessions/${coach.sessionId}`);
      if (r.ok) setScore((await r.json()).score); else coach.sessionId = null;
    }
    $("tab-chat").addEventListener("click", () => showTab("chat"));
    $("tab-coach").addEventListener("click", () => showTab("coach"));
    $("coach-next").addEventListener("click", () => nextQuestion());
    $("coach-hint").addEventListener("click", () => submit("hint"));
    $("coach-form").addEventListener("submit", (e) => { e.preventDefault(); submit($("coach-answer").value); });
    $("coach-answer").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit($("coach-answer").value); }
    });
    for (const b of document.querySelectorAll("[data-lang]")) {
      b.addEventListener("click", () => setTimeout(() => { applyStrings(); loadTopics(); }, 0));
    }
    document.body.dataset.coachReady = "true";
  }
  main();
})();
