// Markdown to DOM through an allow-list builder: every element is created by name from a fixed
// list and every piece of text goes in as a text node, so model text can never add a tag, an
// attribute or a script (`<script>` shows as the text `<script>`). Links keep only http(s) and
// mailto targets; images are shown as links (an <img> could fire onerror). Covers what chat
// answers use: headings, paragraphs, lists, block quotes, fenced and inline code, emphasis,
// strong, links, rules.
"use strict";
(function () {
  const ALLOWED = new Set(["p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "pre",
    "code", "em", "strong", "a", "blockquote", "hr", "br", "del"]);
  function el(tag, children) {
    if (!ALLOWED.has(tag)) throw new Error("markdown: <" + tag + "> is not allowed");
    const e = document.createElement(tag);
    for (const c of children || []) e.append(c);
    return e;
  }
  function safeUrl(url) {
    const u = url.trim();
    return /^(https?:\/\/|mailto:)/i.test(u) ? u : null;
  }

  // Inline: code spans, links and images, strong, emphasis, strike-through; the rest is text.
  function inline(text) {
    const out = [];
    let buf = "";
    const flush = () => { if (buf) { out.push(document.createTextNode(buf)); buf = ""; } };
    let i = 0;
    while (i < text.length) {
      const rest = text.slice(i);
      let m;
      if ((m = /^(`+)([\s\S]*?[^`])\1(?!`)/.exec(rest))) {
        flush(); out.push(el("code", [m[2].trim() || m[2]])); i += m[0].length; continue;
      }
      if ((m = /^!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)/.exec(rest))) {
        flush();
        const url = safeUrl(m[2]);
        if (url) {
          const a = el("a", inline(m[1] || url));
          a.setAttribute("href", url);
          a.setAttribute("rel", "noopener noreferrer nofollow");
          a.setAttribute("target", "_blank");
          out.push(a);
        } else {
          out.push(...inline(m[1]));
        }
        i += m[0].length; continue;
      }
      if ((m = /^(\*\*|__)(?=\S)([\s\S]*?\S)\1/.exec(rest))) {
        flush(); out.push(el("strong", inline(m[2]))); i += m[0].length; continue;
      }
      if ((m = /^~~(?=\S)([\s\S]*?\S)~~/.exec(rest))) {
        flush(); out.push(el("del", inline(m[1]))); i += m[0].length; continue;
      }
      if ((m = /^(\*|_)(?=\S)([\s\S]*?\S)\1(?![\w*])/.exec(rest))) {
        flush(); out.push(el("em", inline(m[2]))); i += m[0].length; continue;
      }
      if ((m = /^https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"]/.exec(rest)) && !/\w$/.test(buf)) {
        flush();
        const a = el("a", [m[0]]);
        a.setAttribute("href", m[0]);
        a.setAttribute("rel", "noopener noreferrer nofollow");
        a.setAttribute("target", "_blank");
        out.push(a); i += m[0].length; continue;
      }
      if (rest[0] === "\\" && rest.length > 1 && /[\\`*_{}\[\]()#+\-.!~>]/.test(rest[1])) {
        buf += rest[1]; i += 2; continue;
      }
      if (rest[0] === "\n") { flush(); out.push(el("br")); i += 1; continue; }
      buf += rest[0]; i += 1;
    }
    flush();
    return out;
  }

  const LIST = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;

  // Blocks, line by line.
  function blocks(lines) {
    const out = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (!line.trim()) { i++; continue; }
      if ((m = /^\s*(```+|~~~+)\s*([\w+-]*)\s*$/.exec(line))) {
        const fence = m[1];
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
        i++;
        const code = el("code", [body.join("\n")]);
        if (m[2]) code.className = "language-" + m[2];
        out.push(el("pre", [code]));
        continue;
      }
      if ((m = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
        out.push(el("h" + m[1].length, inline(m[2]))); i++; continue;
      }
      if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { out.push(el("hr")); i++; continue; }
      if (/^\s{0,3}>/.test(line)) {
        const body = [];
        while (i < lines.length && /^\s{0,3}>/.test(lines[i])) {
          body.push(lines[i].replace(/^\s{0,3}>\s?/, "")); i++;
        }
        out.push(el("blockquote", blocks(body)));
        continue;
      }
      if ((m = LIST.exec(line))) {
        const ordered = /\d/.test(m[2]);
        const indent = m[1].length;
        const list = el(ordered ? "ol" : "ul");
        if (ordered && parseInt(m[2], 10) !== 1) list.setAttribute("start", String(parseInt(m[2], 10)));
        while (i < lines.length) {
          const lm = LIST.exec(lines[i]);
          if (!lm || lm[1].length !== indent || /\d/.test(lm[2]) !== ordered) break;
          const item = [lm[3]];
          i++;
          // Continuation lines and nested lists: indented deeper than the marker.
          while (i < lines.length && lines[i].trim() &&
                 (lines[i].match(/^\s*/)[0].length > indent) ) {
            item.push(lines[i].slice(Math.min(indent + 2, lines[i].match(/^\s*/)[0].length)));
            i++;
          }
          const nested = item.slice(1).some((l) => LIST.test(l));
          const li = el("li", nested
            ? [...inline(item[0]), ...blocks(item.slice(1))]
            : inline(item.join("\n")));
          list.append(li);
          while (i < lines.length && !lines[i].trim() && i + 1 < lines.length &&
                 LIST.test(lines[i + 1]) && LIST.exec(lines[i + 1])[1].length === indent) i++;
        }
        out.push(list);
        continue;
      }
      const para = [];
      while (i < lines.length && lines[i].trim() && !LIST.test(lines[i]) &&
             !/^\s{0,3}(#{1,6}\s|>|```|~~~)/.test(lines[i])) {
        para.push(lines[i].trim()); i++;
      }
      if (para.length === 0) { para.push(lines[i].trim()); i++; }
      out.push(el("p", inline(para.join("\n"))));
    }
    return out;
  }

  /** The markdown `text` as a fragment of allow-listed elements and text nodes. */
  function render(text) {
    const frag = document.createDocumentFragment();
    frag.append(...blocks(String(text ?? "").replace(/\r\n?/g, "\n").split("\n")));
    return frag;
  }

  window.Markdown = { render };
})();
