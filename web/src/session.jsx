// Session list, the conversation and the composer.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import {
  state,
  changed,
  navigate,
  renameSession,
  forkSession,
  deleteSession,
  reportError,
  loadMessages,
  pendingList,
  waitsOn,
} from './store.js';
import { Diff } from './diff.jsx';
import { confirmDialog } from './confirm.jsx';
import { useContentSearch, Snippet } from './search.jsx';
import { enc } from './api.js';
import { Composer } from './composer.jsx';
import { HeadMenu } from './headmenu.jsx';
import { ShareButton, ShareDialog } from './sharebox.jsx';
import { newSession } from './newsession.js';
import { LongText, LongMarkdown } from './longtext.jsx';
import { AnswerTools, EditButton } from './answer.jsx';
import { dateOnly } from './format.js';
import { CopyButton, MessageTime, UserMessageTools, SessionTools, RevertNotice, ChangedFiles, visibleMessages, hiddenByRevert } from './convo.jsx';

// The composer lives in composer.jsx; main.jsx takes it from here with the rest of the session view.
export { Composer };

function ago(ms) {
  if (!ms) return '';
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return dateOnly(ms);
}

export function SessionList({ activeID }) {
  const [q, setQ] = useState('');
  const needle = q.trim().toLowerCase();
  const hits = useContentSearch(q);
  const list = Object.values(state.sessions)
    .filter((s) => !needle || (s.title || '').toLowerCase().includes(needle) || s.id.toLowerCase().includes(needle) || hits[s.id])
    .sort((a, b) => (b.time?.updated || b.time?.created || 0) - (a.time?.updated || a.time?.created || 0));
  const create = () => newSession().catch(reportError);
  return (
    <aside class="sidebar">
      <div class="sidebar-top">
        <input type="search" placeholder="Search sessions and messages" value={q} onInput={(e) => setQ(e.currentTarget.value)} aria-label="Search sessions" />
        <button class="primary" onClick={create} title="New session (Ctrl+Alt+N)" aria-keyshortcuts="Control+Alt+N" data-testid="new-session">
          + New
        </button>
      </div>
      <ul class="session-list" data-testid="session-list">
        {list.map((s) => {
          const busy = state.status[s.id] && state.status[s.id].type !== 'idle';
          const waiting = pendingList().some((p) => waitsOn(p.item, s.id));
          return (
            <li key={s.id} class={s.id === activeID ? 'active' : ''}>
              <a href={hits[s.id]?.messageID ? `#/session/${s.id}?msg=${enc(hits[s.id].messageID)}` : `#/session/${s.id}`}>
                <span class="title">{s.title || 'Untitled'}</span>
                {hits[s.id] && <Snippet hit={hits[s.id]} />}
                <span class="meta">
                  {waiting && <span class="dot warn" title="Waiting for you" />}
                  {busy && <span class="dot busy" title="Working" />}
                  {ago(s.time?.updated || s.time?.created)}
                </span>
              </a>
            </li>
          );
        })}
        {list.length === 0 && <li class="empty muted">{needle ? 'No session matches.' : 'No sessions yet.'}</li>}
      </ul>
    </aside>
  );
}

/**
 * How many messages a conversation renders at first; scrolling up to its start (or "Show earlier")
 * adds as many again. Small, so that opening a long session is one short task.
 */
const WINDOW = 40;

export function SessionView({ id }) {
  const s = state.sessions[id];
  const m = state.messages[id];
  useEffect(() => {
    loadMessages(id);
  }, [id]);
  const [editing, setEditing] = useState(false);
  // What the rename box holds: set when renaming starts, so a title the server writes meanwhile
  // (the model's generated title) never replaces what is being typed.
  const [draft, setDraft] = useState('');
  const status = state.status[id];
  const busy = status && status.type !== 'idle';
  const all = m ? Object.values(m.byId).sort((a, b) => (a.info.id < b.info.id ? -1 : 1)) : [];
  // Undo (a revert) hides the messages from its point on until Redo or the next prompt.
  const msgs = visibleMessages(s, all);
  // A long session renders its last WINDOW messages, and more on request (or to reach a search hit).
  const [shown, setShown] = useState(WINDOW);
  const from = Math.max(0, msgs.length - shown);
  // Where the reader was when earlier messages were added above: the same message stays in view.
  const keep = useRef(null);
  const showEarlier = () => {
    const el = scroller.current;
    if (el) keep.current = { height: el.scrollHeight, top: el.scrollTop };
    setShown((n) => n + WINDOW);
  };
  const earlierButton = useRef(null);
  const hidden = hiddenByRevert(s, all);
  const err = state.sessionErrors[id];
  const scroller = useRef(null);
  // The conversation follows new content while it is scrolled to the bottom: any change inside it
  // (streamed text, a tool's output, a card opening, an approval appearing) or of its size.
  const stick = useRef(true);
  const toBottom = () => {
    const el = scroller.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  };
  useEffect(toBottom);
  useLayoutEffect(() => {
    const el = scroller.current;
    const k = keep.current;
    keep.current = null;
    if (el && k) el.scrollTop = k.top + (el.scrollHeight - k.height);
  }, [shown]);
  // Reaching the start of what is rendered loads the messages before it. Observed afresh after
  // each step, so a screen taller than the added messages keeps filling.
  useEffect(() => {
    const button = earlierButton.current;
    if (!button || !scroller.current) return;
    const io = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && showEarlier(), {
      root: scroller.current,
      rootMargin: '300px 0px 0px 0px',
    });
    io.observe(button);
    return () => io.disconnect();
  }, [shown, from > 0]);
  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const mo = new MutationObserver(toBottom);
    mo.observe(el, { childList: true, subtree: true, characterData: true, attributes: true });
    const ro = new ResizeObserver(toBottom);
    ro.observe(el);
    // Sending a prompt brings the conversation back to its end.
    const follow = (e) => {
      if (e.detail === id) {
        stick.current = true;
        toBottom();
      }
    };
    window.addEventListener('tandem:follow', follow);
    return () => {
      mo.disconnect();
      ro.disconnect();
      window.removeEventListener('tandem:follow', follow);
    };
  }, [id]);
  // A search hit's message (#/session/ID?msg=MSG): scrolled into the middle of the view and marked
  // once it is there, and the conversation stops following its end until scrolled back down.
  const target = state.route.view === 'session' && state.route.id === id ? state.route.msg : null;
  const found = useRef(null);
  useEffect(() => {
    if (!target || found.current === target) return;
    const el = scroller.current?.querySelector(`[data-id="${CSS.escape(target)}"]`);
    if (!el) {
      const at = msgs.findIndex((x) => x.info.id === target);
      if (at >= 0 && at < from) setShown(msgs.length - at + 10); // before the window: widen it
      return; // not loaded or not rendered yet: a later render finds it
    }
    found.current = target;
    stick.current = false;
    el.scrollIntoView({ block: 'center' });
    el.classList.add('found');
    setTimeout(() => el.classList.remove('found'), 3000);
  });
  const onScroll = (e) => {
    const el = e.currentTarget;
    stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };
  const renameInput = useRef(null);
  const cancelled = useRef(false);
  // A layout effect, not an effect: it runs as the box appears, before the next key press, so the
  // first letters typed right after Rename land in the box.
  useLayoutEffect(() => {
    if (editing && renameInput.current) {
      renameInput.current.focus();
      renameInput.current.select();
    }
  }, [editing]);
  const startRename = () => {
    cancelled.current = false;
    setDraft(s?.title || '');
    setEditing(true);
  };
  const rename = async (title) => {
    setEditing(false);
    // Esc cancels: the blur that follows must not save what was typed.
    if (cancelled.current) return;
    if (title && title !== s?.title) await renameSession(id, title).catch(reportError);
  };
  const fork = async () => {
    try {
      const f = await forkSession(id);
      navigate(`#/session/${f.id}`);
    } catch (e) {
      reportError(e);
    }
  };
  const remove = async () => {
    const ok = await confirmDialog({
      title: `Delete “${s?.title || id}”?`,
      body: 'The session and its messages are deleted. This cannot be undone.',
      confirm: 'Delete',
      danger: true,
    });
    if (!ok) return;
    try {
      await deleteSession(id);
      navigate('#/');
    } catch (e) {
      reportError(e);
    }
  };
  return (
    <div class="session">
      <div class="session-head">
        <a class="back" href="#/" aria-label="All sessions">
          ‹
        </a>
        {editing ? (
          <input
            class="rename"
            ref={renameInput}
            value={draft}
            onInput={(e) => setDraft(e.currentTarget.value)}
            aria-label="Session title"
            onKeyDown={(e) => {
              if (e.key === 'Enter') rename(e.currentTarget.value.trim());
              if (e.key === 'Escape') {
                e.preventDefault();
                e.stopPropagation();
                cancelled.current = true;
                setEditing(false);
              }
            }}
            onBlur={(e) => rename(e.currentTarget.value.trim())}
          />
        ) : (
          <h2 title="Click to rename" onClick={startRename} data-testid="session-title">
            {s?.title || 'Untitled'}
          </h2>
        )}
        <span class="spacer" />
        {busy && (
          <span class="working">
            <span class="spinner" /> <span class="label">{status.type === 'retry' ? `retrying${status.message ? ': ' + status.message : ''}` : 'working'}</span>
          </span>
        )}
        <button class="ghost rename-btn" onClick={startRename} title="Rename" data-testid="rename">
          Rename
        </button>
        <HeadMenu>
          <SessionTools id={id} msgs={all} busy={busy} />
          <button class="ghost" onClick={fork} title="Fork this session">
            Fork
          </button>
          <ShareButton id={id} />
          <button class="ghost danger" onClick={remove} title="Delete this session">
            Delete
          </button>
        </HeadMenu>
      </div>
      <div class="conversation" ref={scroller} onScroll={onScroll} data-testid="conversation" tabIndex={-1}>
        {m && !m.loaded && msgs.length === 0 && <div class="muted center">Loading…</div>}
        {m?.loaded && msgs.length === 0 && <Empty />}
        {from > 0 && (
          <button type="button" class="ghost earlier" onClick={showEarlier} ref={earlierButton} data-testid="show-earlier">
            Show {Math.min(WINDOW, from)} earlier message{Math.min(WINDOW, from) === 1 ? '' : 's'} ({from} hidden)
          </button>
        )}
        {msgs.slice(from).map((msg, k) => {
          const i = from + k;
          return <Message key={msg.info.id} msg={msg} last={i === msgs.length - 1 || msgs[i + 1].info.role === 'user'} turn={{ msgs, index: i, busy }} />;
        })}
        <RevertNotice id={id} hidden={hidden} />
        <ChangedFiles id={id} busy={busy} />
        {err && <ErrorBox error={err} />}
        <Todos list={state.todos[id]} />
      </div>
      <Composer sessionID={id} busy={busy} />
      {state.shareOpen?.id === id && <ShareDialog id={id} />}
    </div>
  );
}

function Empty() {
  return (
    <div class="empty-convo muted">
      <p>Send a message to start. With the offline demo model, try:</p>
      <ul>
        <li>
          <code>run: echo hi</code> — runs a command after you approve it
        </li>
        <li>
          <code>ask: Which DB? | Postgres | SQLite</code> — asks you a question
        </li>
        <li>
          <code>read: README.md</code> — reads a file
        </li>
      </ul>
    </div>
  );
}

function errorText(e) {
  if (!e) return '';
  return e.data?.message || e.message || e.name || JSON.stringify(e);
}

function ErrorBox({ error }) {
  if (error?.name === 'MessageAbortedError') return <div class="notice muted">Aborted.</div>;
  return (
    <div class="error-box" role="alert">
      <strong>{error?.name || 'Error'}</strong> {errorText(error)}
    </div>
  );
}

function Todos({ list }) {
  if (!list || !list.length) return null;
  return (
    <div class="todos">
      <div class="muted small">Plan</div>
      {list.map((t, i) => (
        <div key={i} class={'todo ' + t.status}>
          <span>{t.status === 'completed' ? '☑' : t.status === 'in_progress' ? '◐' : '☐'}</span> {t.content}
        </div>
      ))}
    </div>
  );
}

export function Message({ msg, last, shared, turn }) {
  const { info, parts } = msg;
  if (info.role === 'user') {
    // A compaction (/compact, or a turn that neared the model's context window): from here on the
    // model is sent the summary that follows instead of the messages above.
    const compaction = parts.find((p) => p.type === 'compaction');
    if (compaction) {
      return (
        <div class="msg compaction muted small" data-testid="compaction" data-auto={String(!!compaction.auto)}>
          <span>
            {compaction.auto ? 'Compacted automatically' : 'Compacted'}: the model now sees the summary below instead of the
            messages above
          </span>
        </div>
      );
    }
    const text = parts
      .filter((p) => p.type === 'text' && !p.synthetic)
      .map((p) => p.text)
      .join('\n');
    return (
      <div class="msg user" data-testid="msg-user" data-id={info.id}>
        <div class="bubble">
          <LongText text={text} />
        </div>
        {!shared && (
          <UserMessageTools msg={msg} text={text}>
            {turn && <EditButton msg={msg} text={text} busy={turn.busy} />}
          </UserMessageTools>
        )}
      </div>
    );
  }
  return (
    <div class="msg assistant" data-testid="msg-assistant" data-id={info.id}>
      {parts.map((p) => (
        <Part key={p.id} part={p} />
      ))}
      {info.error && <ErrorBox error={info.error} />}
      {last && info.modelID && info.time?.completed && (
        <div class="msg-foot muted small">
          {info.agent || info.mode} · {info.modelID} · <MessageTime ms={info.time.completed} what="Finished" />
        </div>
      )}
      {last && turn && !shared && (
        <div class="msg-foot small">
          <AnswerTools msgs={turn.msgs} index={turn.index} isLast={turn.index === turn.msgs.length - 1} busy={turn.busy} />
        </div>
      )}
    </div>
  );
}

function Part({ part }) {
  switch (part.type) {
    case 'text':
      if (part.synthetic || part.ignored) return null;
      return <LongMarkdown text={part.text || ''} />;
    case 'reasoning':
      if (!part.text) return null;
      return (
        <details class="reasoning">
          <summary>Thinking</summary>
          <div class="pre">{part.text}</div>
        </details>
      );
    case 'tool':
      return <ToolCall part={part} />;
    case 'file':
      return <div class="file-part">📎 {part.filename || part.url}</div>;
    case 'patch':
      return <div class="muted small">Changed {(part.files || []).join(', ')}</div>;
    default:
      return null;
  }
}

const stateIcon = { pending: '○', running: '', completed: '✓', error: '✕' };

function summarize(tool, input) {
  if (!input) return '';
  if (input.command) return input.command;
  if (Array.isArray(input.questions)) return input.questions.map((q) => q.question).join(' · ');
  if (input.filePath || input.filepath || input.path) return input.filePath || input.filepath || input.path;
  if (input.pattern) return input.pattern;
  if (input.url) return input.url;
  const s = JSON.stringify(input);
  return s === '{}' ? '' : s.length > 120 ? s.slice(0, 117) + '…' : s;
}

// A finished question says what was answered ("Which DB? → SQLite"), not "Asked 1 question".
function toolTitle(part, st, input) {
  const answers = st.metadata?.answers;
  if (part.tool === 'question' && st.status === 'completed' && Array.isArray(answers) && Array.isArray(input.questions)) {
    return input.questions.map((q, i) => `${q.question} → ${(answers[i] || []).join(', ') || '(no answer)'}`).join(' · ');
  }
  if (part.tool === 'question' && st.status === 'error' && Array.isArray(input.questions)) {
    return `${input.questions.map((q) => q.question).join(' · ')} → dismissed`;
  }
  return st.title && st.title !== part.tool ? st.title : summarize(part.tool, input);
}

function ToolCall({ part }) {
  const st = part.state || { status: 'pending' };
  const input = st.input || {};
  const md = st.metadata || {};
  // Call IDs come from the model and repeat across messages and sessions (the demo model's are all
  // call_demo_1): a request belongs to this card only if its session and message match too.
  const waiting = Object.values(state.permissions).find(
    (p) => p.tool?.callID === part.callID && p.tool?.messageID === part.messageID && p.sessionID === part.sessionID,
  );
  // A task's card also carries what its subagent is waiting for: the child session is in its metadata.
  const child = part.tool === 'task' && md.sessionId;
  const fromChild = child && pendingList().find((p) => waitsOn(p.item, child));
  const isBash = part.tool === 'bash';
  const output = st.status === 'completed' ? st.output : md.output;
  const diff = md.diff;
  const [open, setOpen] = useState(isBash || !!diff);
  const outRef = useRef(null);
  useEffect(() => {
    if (outRef.current) outRef.current.scrollTop = outRef.current.scrollHeight;
  });
  const openPending = () => {
    state.pendingOpen = true;
    state.pendingCurrent = (waiting || fromChild).id;
    changed();
  };
  return (
    <div class={'tool ' + st.status} data-testid="tool" data-tool={part.tool} data-status={st.status}>
      {/* The waiting button is beside the head, not in it: a button inside a button is unreachable for
          screen readers (axe: nested-interactive). */}
      <div class="tool-row">
        <div
          class="tool-head"
          role="button"
          tabIndex={0}
          aria-expanded={open ? 'true' : 'false'}
          onClick={() => setOpen(!open)}
          onKeyDown={(e) => {
            if (e.target !== e.currentTarget || (e.key !== 'Enter' && e.key !== ' ')) return;
            e.preventDefault();
            setOpen(!open);
          }}
        >
          <span class="chevron" aria-hidden="true">
            ›
          </span>
          <span class={'state ' + st.status} aria-label={st.status}>
            {st.status === 'running' ? <span class="spinner" /> : stateIcon[st.status]}
          </span>
          <span class="tool-name">{part.tool}</span>
          <span class="tool-title">{toolTitle(part, st, input)}</span>
        </div>
        {waiting && (
          <button class="waiting" onClick={openPending}>
            waiting for approval
          </button>
        )}
        {fromChild && (
          <button class="waiting" onClick={openPending} data-testid="subagent-waiting">
            subagent waiting for you
          </button>
        )}
      </div>
      {open && (
        <div class="tool-body">
          {isBash && input.command && <pre class="command">$ {input.command}</pre>}
          {diff && <Diff text={diff} />}
          {!isBash && !diff && Object.keys(input).length > 0 && <pre class="meta">{JSON.stringify(input, null, 2)}</pre>}
          {output && (
            <div class="copyable">
              <CopyButton text={output} label="Copy output" />
              <pre class="output" ref={outRef} data-testid="tool-output">
                {output}
              </pre>
            </div>
          )}
          {st.status === 'error' && (
            <div class="error-box" role="alert">
              {st.error}
            </div>
          )}
        </div>
      )}
    </div>
  );
}
