// What a conversation offers beyond its messages: copy buttons, timestamps, forking from a
// message, undo/redo (the server's revert/unrevert), compaction, and the files a session changed.
import { useEffect, useState } from 'preact/hooks';
import { state, changed, navigate, reportError, toast, saveDraft } from './store.js';
import { get, post, enc } from './api.js';
import { Diff } from './diff.jsx';
import { clock, fullDate } from './format.js';
import './extras.css';

// ---------- copy ----------

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  // Plain http on another host is not a secure context: the older command still works there.
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.setAttribute('readonly', '');
  ta.style.position = 'fixed';
  ta.style.opacity = '0';
  document.body.appendChild(ta);
  ta.select();
  const ok = document.execCommand('copy');
  ta.remove();
  if (!ok) throw new Error('The browser refused to copy');
}

export async function flash(button, text) {
  try {
    await copyText(text);
    button.textContent = 'Copied';
  } catch (e) {
    button.textContent = 'Copy failed';
    reportError(e);
  }
  setTimeout(() => {
    button.textContent = 'Copy';
  }, 1500);
}

// Code blocks come from rendered Markdown (HTML, not components): one listener serves their buttons.
if (typeof document !== 'undefined') {
  document.addEventListener('click', (e) => {
    const button = e.target.closest?.('button.copy[data-copy-code]');
    if (!button) return;
    const pre = button.parentElement?.querySelector('pre');
    if (pre) flash(button, pre.innerText);
  });
}

/** A Copy button for the text it is given, placed over the top-right corner of its parent. */
export function CopyButton({ text, label = 'Copy' }) {
  return (
    <button type="button" class="copy" aria-label={label} data-testid="copy" onClick={(e) => flash(e.currentTarget, typeof text === 'function' ? text() : text)}>
      Copy
    </button>
  );
}

// ---------- time ----------

/** When a message was sent (or finished), short, with the full date on hover. */
export function MessageTime({ ms, what = 'Sent' }) {
  if (!ms) return null;
  const d = new Date(ms);
  return (
    <time class="msg-time" dateTime={d.toISOString()} title={`${what} ${fullDate(ms)}`} data-testid="msg-time">
      {clock(ms)}
    </time>
  );
}

// ---------- fork from a message ----------

/**
 * Forks the session before message (a user message): the fork has the conversation up to it, and
 * its composer holds that message's text, to send as it was or changed.
 */
export async function forkBefore(sessionID, messageID, text) {
  const f = await post(`/session/${enc(sessionID)}/fork`, { messageID });
  if (!f?.id) return;
  state.sessions[f.id] = f;
  if (text) saveDraft(f.id, text);
  changed();
  navigate(`#/session/${f.id}`);
}

export function UserMessageTools({ msg, text, children }) {
  const { info } = msg;
  return (
    <div class="msg-tools">
      <MessageTime ms={info.time?.created} />
      <button
        type="button"
        class="ghost"
        title="Fork the session before this message, with its text in the composer"
        data-testid="fork-here"
        onClick={() => forkBefore(info.sessionID, info.id, text).catch(reportError)}
      >
        Fork from here
      </button>
      {children}
    </div>
  );
}

// ---------- undo, redo, compact ----------

/** The messages a revert hides: from its message on. */
export function hiddenByRevert(session, msgs) {
  const from = session?.revert?.messageID;
  if (!from) return 0;
  return msgs.filter((m) => m.info.id >= from).length;
}

export function visibleMessages(session, msgs) {
  const from = session?.revert?.messageID;
  return from ? msgs.filter((m) => m.info.id < from) : msgs;
}

function lastUserBefore(msgs, bound) {
  for (let i = msgs.length - 1; i >= 0; i--) {
    const m = msgs[i];
    if (m.info.role !== 'user' || (bound && m.info.id >= bound)) continue;
    if (m.parts.some((p) => p.type === 'compaction')) continue;
    return m;
  }
  return null;
}

function modelOf(msgs) {
  for (let i = msgs.length - 1; i >= 0; i--) {
    const i2 = msgs[i].info;
    if (i2.providerID && i2.modelID) return { providerID: i2.providerID, modelID: i2.modelID };
    if (i2.model?.providerID) return { providerID: i2.model.providerID, modelID: i2.model.modelID };
  }
  const c = state.composer.model || '';
  const k = c.indexOf('/');
  return k > 0 ? { providerID: c.slice(0, k), modelID: c.slice(k + 1) } : null;
}

/** Undo (revert the last prompt still shown), Redo (bring everything back) and Compact. */
export function SessionTools({ id, msgs, busy }) {
  const s = state.sessions[id];
  const [working, setWorking] = useState('');
  const bound = s?.revert?.messageID;
  const undoTarget = lastUserBefore(msgs, bound);
  const act = async (what, fn) => {
    setWorking(what);
    try {
      const res = await fn();
      if (res?.id) state.sessions[res.id] = res;
      changed();
    } catch (e) {
      reportError(e);
    } finally {
      setWorking('');
    }
  };
  const undo = () => act('undo', () => post(`/session/${enc(id)}/revert`, { messageID: undoTarget.info.id }));
  const redo = () => act('redo', () => post(`/session/${enc(id)}/unrevert`, {}));
  const compact = () => {
    const model = modelOf(msgs);
    if (!model) return toast('No model to write the summary with.', 'error');
    act('compact', () => post(`/session/${enc(id)}/summarize`, model));
  };
  return (
    <span class="session-tools">
      <button class="ghost" disabled={busy || !!working || !undoTarget} onClick={undo} title="Undo the last prompt: its messages hide and the files it changed are put back" data-testid="undo">
        Undo
      </button>
      <button class="ghost" disabled={busy || !!working || !bound} onClick={redo} title="Bring back what Undo hid, files included" data-testid="redo">
        Redo
      </button>
      <button class="ghost" disabled={busy || !!working || msgs.length === 0} onClick={compact} title="Summarise the conversation so far; the model then sees the summary instead" data-testid="compact">
        {working === 'compact' ? 'Compacting…' : 'Compact'}
      </button>
    </span>
  );
}

/** Says what Undo hid, with a Redo. */
export function RevertNotice({ id, hidden }) {
  if (!hidden) return null;
  return (
    <div class="notice muted small" data-testid="revert-notice">
      {hidden} message{hidden === 1 ? '' : 's'} undone; the next prompt drops {hidden === 1 ? 'it' : 'them'} for good.{' '}
      <button
        type="button"
        class="ghost"
        onClick={() =>
          post(`/session/${enc(id)}/unrevert`, {})
            .then((s) => {
              if (s?.id) state.sessions[s.id] = s;
              changed();
            })
            .catch(reportError)
        }
      >
        Redo
      </button>
    </div>
  );
}

// ---------- changed files ----------

/** The files the session changed, each with its diff, refreshed when the server says they changed. */
export function ChangedFiles({ id, busy }) {
  const diffs = state.diffs?.[id];
  const revision = state.sessions[id]?.revert?.messageID || '';
  useEffect(() => {
    if (busy) return;
    get(`/session/${enc(id)}/diff`)
      .then((list) => {
        state.diffs = state.diffs || {};
        state.diffs[id] = list || [];
        changed();
      })
      // A session that is gone is said once, by the conversation's own load ("Session not found").
      .catch((e) => e.status !== 404 && reportError(e));
  }, [id, busy, revision]);
  if (!diffs || diffs.length === 0) return null;
  const adds = diffs.reduce((n, d) => n + (d.additions || 0), 0);
  const dels = diffs.reduce((n, d) => n + (d.deletions || 0), 0);
  return (
    <details class="changed-files" data-testid="changed-files">
      <summary>
        {diffs.length} file{diffs.length === 1 ? '' : 's'} changed <span class="adds">+{adds}</span> <span class="dels">−{dels}</span>
      </summary>
      {diffs.map((d) => (
        <details class="changed-file" key={d.file} data-file={d.file}>
          <summary>
            <code>{d.file}</code> {d.status && <span class="muted small">{d.status}</span>} <span class="adds">+{d.additions || 0}</span>{' '}
            <span class="dels">−{d.deletions || 0}</span>
          </summary>
          <Diff text={d.patch} />
        </details>
      ))}
    </details>
  );
}
