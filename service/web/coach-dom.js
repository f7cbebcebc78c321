/* The coach's and the interview's shared page pieces (coach.js, interview.js): their strings in the page's
   language, an element builder, and **bold** / `code` inline in a line of text. */
"use strict";

window.VRAMwiseCoachDom = (() => {
  /** The string lookup of a panel whose `state` holds `strings` ({en, zh}) and its browser language. */
  function strings(state) {
    const lang = () => localStorage.getItem("vramwise.lang") || state.lang;
    const s = (key, vars) => {
      let text = (state.strings[lang()] || state.strings.en || {})[key] ?? key;
      for (const [k, v] of Object.entries(vars || {})) text = text.replaceAll(`{${k}}`, String(v));
      return text;
    };
    return { lang, s };
  }
  function node(tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v; else if (k === "text") n.textContent = v; else n.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) n.append(c);
    return n;
  }
  function inline(parent, text) {
    for (const part of text.split(/(\*\*[^*]+\*\*|`[^`]+`)/)) {
      if (!part) continue;
      if (part.startsWith("**") && part.endsWith("**")) parent.append(node("strong", { text: part.slice(2, -2) }));
      else if (part.startsWith("`") && part.endsWith("`")) parent.append(node("code", { text: part.slice(1, -1) }));
      else parent.append(document.createTextNode(part));
    }
    return parent;
  }
  return { strings, node, inline };
})();
