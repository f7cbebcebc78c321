/* A small, safe Markdown subset for the chat page's answer text (app.js): paragraphs, nested lists,
   headings, pipe tables, **bold**, `code`. Text only through textContent, never innerHTML. Lines wrapped
   mid-sentence (the templates wrap at ~100 columns) join with a space; a line after a full stop, colon or
   their Chinese forms starts a new line. */
"use strict";

window.VRAMwiseMarkdown = (() => {
  const SENTENCE_END = /[.:!?;。：！？；)）]$|\*\*$/;

  function el(tag, text) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function appendInline(parent, text) {
    for (const part of text.split(/(\*\*[^*]+\*\*|`[^`]+`)/)) {
      if (!part) continue;
      if (part.startsWith("**") && part.endsWith("**") && part.length > 4) parent.append(el("strong", part.slice(2, -2)));
      else if (part.startsWith("`") && part.endsWith("`") && part.length > 2) parent.append(el("code", part.slice(1, -1)));
      else parent.append(document.createTextNode(part));
    }
    return parent;
  }
  function cells(line) {
    return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  }
  const isTableRow = (line) => /^\s*\|.*\|\s*$/.test(line);
  const isTableRule = (line) => /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line);

  function table(rows) {
    const node = el("table");
    node.className = "md-table";
    const [head, ...body] = rows;
    const tr = el("tr");
    for (const c of cells(head)) { const th = appendInline(el("th"), c); th.scope = "col"; tr.append(th); }
    node.append(el("thead"));
    node.firstChild.append(tr);
    const tbody = el("tbody");
    for (const row of body) {
      const r = el("tr");
      for (const c of cells(row)) r.append(appendInline(el("td"), c));
      tbody.append(r);
    }
    node.append(tbody);
    const wrap = el("div");
    wrap.className = "md-table-wrap";
    wrap.append(node);
    return wrap;
  }

  function render(text) {
    const root = document.createDocumentFragment();
    const lines = text.split(/\r?\n/);
    let para = null;
    let last = "";
    let stack = []; // open lists: {indent, type, list}
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n].replace(/\s+$/, "");
      if (!line.trim()) { para = null; stack = []; continue; }
      if (isTableRow(line) && n + 1 < lines.length && isTableRule(lines[n + 1])) { // a pipe table
        const rows = [line];
        n += 2;
        while (n < lines.length && isTableRow(lines[n])) rows.push(lines[n++]);
        n -= 1;
        para = null; stack = [];
        root.append(table(rows));
        continue;
      }
      const item = line.match(/^(\s*)([-*•]|\d+[.)])\s+(.*)$/);
      if (item) {
        para = null;
        const indent = item[1].length;
        const type = /\d/.test(item[2]) ? "ol" : "ul";
        while (stack.length && stack[stack.length - 1].indent > indent) stack.pop();
        let top = stack[stack.length - 1];
        if (top && top.indent === indent && top.type !== type) { stack.pop(); top = stack[stack.length - 1]; }
        if (!top || top.indent < indent) {
          const list = document.createElement(type);
          const host = top && top.list.lastElementChild;
          (host || root).append(list);
          top = { indent, type, list };
          stack.push(top);
        }
        top.list.append(appendInline(el("li"), item[3]));
        continue;
      }
      const heading = line.match(/^(#{1,4})\s+(.*)$/);
      if (heading) {
        para = null; stack = [];
        root.append(appendInline(el("h4"), heading[2]));
        continue;
      }
      if (stack.length && /^\s/.test(line)) { // continuation of the last list item
        const li = stack[stack.length - 1].list.lastElementChild;
        li.append(document.createTextNode(" "));
        appendInline(li, line.trim());
        continue;
      }
      stack = [];
      if (!para) { para = el("p"); root.append(para); }
      else if (SENTENCE_END.test(last)) para.append(el("br"));
      else para.append(document.createTextNode(" ")); // a line wrapped mid-sentence
      appendInline(para, line);
      last = line;
    }
    return root;
  }

  /** A stored turn's short part, as the live answer's summary was: up to the end of the first paragraph
      that opens with bold (the verdict block of a templated answer); "" when there is none. */
  function restoredSummary(text) {
    const blocks = text.split(/\n\s*\n/);
    let end = 0;
    for (let i = 0; i < blocks.length - 1; i++) { // the last block is never the summary: something follows
      end = text.indexOf(blocks[i], end) + blocks[i].length;
      if (blocks[i].trimStart().startsWith("**")) return text.slice(0, end);
    }
    return "";
  }

  return { render, restoredSummary };
})();
