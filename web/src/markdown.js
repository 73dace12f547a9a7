// Markdown to HTML for assistant text. Raw HTML in the source is escaped
// (never rendered), links are limited to safe schemes, and code blocks are
// highlighted with a handful of common languages to keep the bundle small.
import { Marked } from 'marked';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

const langs = { bash, css, diff, go, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, def] of Object.entries(langs)) hljs.registerLanguage(name, def);
hljs.registerAliases(['sh', 'shell', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['golang'], { languageName: 'go' });
hljs.registerAliases(['patch'], { languageName: 'diff' });

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

export function highlight(code, lang) {
  const l = (lang || '').toLowerCase();
  if (l && hljs.getLanguage(l)) return hljs.highlight(code, { language: l, ignoreIllegals: true }).value;
  return escapeHtml(code);
}

const safeHref = (href) => {
  const h = String(href || '').trim();
  return /^(https?:|mailto:|#|\/)/i.test(h) ? h : null;
};

const md = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html(token) {
      return escapeHtml(token.text || token.raw || '');
    },
    code(token) {
      const lang = (token.lang || '').split(/\s/)[0];
      const pre = `<pre class="code"><code class="hljs${lang ? ' language-' + escapeHtml(lang) : ''}">${highlight(token.text, lang)}</code></pre>`;
      return `<div class="copyable"><button type="button" class="copy" data-copy-code aria-label="Copy code" data-testid="copy">Copy</button>${pre}</div>`;
    },
    link(token) {
      const href = safeHref(token.href);
      const text = this.parser.parseInline(token.tokens);
      if (!href) return text;
      const title = token.title ? ` title="${escapeHtml(token.title)}"` : '';
      return `<a href="${escapeHtml(href)}"${title} target="_blank" rel="noopener noreferrer">${text}</a>`;
    },
    image(token) {
      return escapeHtml(token.text || '');
    },
  },
});

const cache = new Map();

/** Renders Markdown, memoised by source so streaming re-renders only what changed. */
export function renderMarkdown(src) {
  const hit = cache.get(src);
  if (hit !== undefined) return hit;
  const html = md.parse(src || '');
  cache.set(src, html);
  if (cache.size > 500) cache.delete(cache.keys().next().value);
  return html;
}
