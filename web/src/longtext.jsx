// A prompt longer than a screen (a pasted log) shows its start and a button for the rest, so a
// 300 KB paste is not a 59,000-px bubble; the whole text is there for Copy, Edit and Fork. An
// answer as long (a model that echoes the paste, a dumped file) does the same: only its start is
// turned into Markdown, so a 6 MB answer neither blocks the page for seconds nor becomes a
// 800,000-px column; opened, a text too long to format is shown as it is.
import { useEffect, useState } from 'preact/hooks';
import { num } from './format.js';
import './longtext.css';

/** Characters a prompt shows before "Show all". */
export const LONG_TEXT = 3000;
/** An answer longer than this many characters shows its start (ANSWER_START) and "Show all". */
export const LONG_ANSWER = 20000;
export const ANSWER_START = 6000;
/** The longest answer that is formatted as Markdown when opened; a longer one is shown as text. */
export const MARKDOWN_LIMIT = 500000;

function Toggle({ open, setOpen, length }) {
  return (
    <button type="button" class="ghost long-toggle" aria-expanded={open ? 'true' : 'false'} onClick={() => setOpen(!open)} data-testid="long-toggle">
      {open ? 'Show less' : `Show all ${num(length)} characters`}
    </button>
  );
}

export function LongText({ text }) {
  const [open, setOpen] = useState(false);
  if (text.length <= LONG_TEXT) return text;
  return (
    <>
      {open ? text : text.slice(0, LONG_TEXT) + '…'}
      <Toggle open={open} setOpen={setOpen} length={text.length} />
    </>
  );
}

let renderer = null;
let loading = null;

/**
 * Loads the Markdown renderer. marked and highlight.js are most of the app's script and the first
 * screen (the inbox, the composer) needs neither, so they are a chunk of their own, which the page
 * starts fetching from its head (a modulepreload link the build adds); an answer drawn before it
 * is there shows as plain text for that moment. A failed load is tried again by the next answer.
 */
export function loadMarkdown() {
  loading ??= import('./markdown.js').then(
    (m) => (renderer = m.renderMarkdown),
    (e) => {
      loading = null;
      throw e;
    },
  );
  return loading;
}

/** The Markdown renderer, or null until it has loaded (the caller is drawn again then). */
function useRenderer() {
  const [render, setRender] = useState(() => renderer);
  useEffect(() => {
    if (render) return;
    let live = true;
    loadMarkdown().then(
      (r) => live && setRender(() => r),
      () => {},
    );
    return () => {
      live = false;
    };
  }, []);
  return render;
}

/** An answer's text as Markdown; past LONG_ANSWER characters, its start and "Show all". */
export function LongMarkdown({ text }) {
  const [open, setOpen] = useState(false);
  const render = useRenderer();
  const md = (src) => (render ? <div class="md" dangerouslySetInnerHTML={{ __html: render(src) }} /> : <div class="md md-plain">{src}</div>);
  if (text.length <= LONG_ANSWER) return md(text);
  let body;
  if (!open) body = md(text.slice(0, ANSWER_START) + '…');
  else if (text.length <= MARKDOWN_LIMIT) body = md(text);
  else
    body = (
      <div class="md">
        <p class="muted small">Too long to format: shown as plain text.</p>
        <pre class="long-plain">{text}</pre>
      </div>
    );
  return (
    <div class="long-answer">
      {body}
      <Toggle open={open} setOpen={setOpen} length={text.length} />
    </div>
  );
}
