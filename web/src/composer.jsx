// The composer: what is typed, the agent and model pickers, and what helps typing it. `/` at the
// start opens the commands menu (the server's GET /command and the UI's own, such as /compact),
// `@` completes the project's files (GET /find/file) and sends each mentioned file as a file part,
// images and files pasted or dropped become attachments (file parts with a data: URL, as OpenCode
// sends them), and a long paste collapses to a chip that expands.
import { useEffect, useRef, useState } from 'preact/hooks';
import { state, changed, navigate, createSession, sendPrompt, abortSession, reportError, toast, modelOptions, loadDraft, saveDraft } from './store.js';
import { get, post, enc } from './api.js';
import { sessionChoice, choose, forgetPick } from './choice.js';
import { ConnectProvider } from './providers.jsx';
import { takeComposerFocus } from './newsession.js';
import { Meter } from './meter.jsx';
import { num } from './format.js';
import './composer.css';

const CONNECT = '__connect';
/** A paste longer than this many characters is kept in a chip, not spread through the box. */
export const LONG_PASTE = 2000;
const MAX_ATTACHMENT = 20 << 20; // the server's limit for a file part

// Commands the UI runs itself rather than the server's template commands.
const uiCommands = [
  { name: 'compact', description: 'Summarise the conversation so far; the model then sees the summary instead', ui: true },
  { name: 'new', description: 'Start a new session', ui: true },
];

async function loadCommands() {
  if (state.commandList) return;
  state.commandList = [];
  try {
    const list = await get('/command');
    state.commandList = Array.isArray(list) ? list : [];
  } catch (e) {
    state.commandList = null; // asked again next time
    if (e.status !== 401) reportError(e);
  }
  changed();
}

function allCommands() {
  const server = (state.commandList || []).map((c) => ({ ...c, ui: false }));
  return [...uiCommands.filter((u) => !server.some((s) => s.name === u.name)), ...server];
}

/** "[Pasted text #n, 12,345 characters]": where a long paste sits in the text until it is sent. */
const pasteLabel = (n, text) => `[Pasted text #${n}, ${num(text.length)} characters]`;

function readAsDataURL(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error || new Error(`Cannot read ${file.name}`));
    r.readAsDataURL(file);
  });
}

/** The @mentions of text: "@path" at the start or after white space. */
function mentionsIn(text) {
  const out = new Set();
  for (const m of text.matchAll(/(^|\s)@([^\s@]+)/g)) out.add(m[2]);
  return out;
}

function fileParts(dir, text, completed) {
  if (!dir) return [];
  const parts = [];
  for (const p of mentionsIn(text)) {
    if (!completed.has(p) || p.startsWith('/') || p.startsWith('../')) continue;
    parts.push({
      type: 'file',
      mime: p.endsWith('/') ? 'application/x-directory' : 'text/plain',
      filename: p,
      url: 'file://' + dir.replace(/\/$/, '') + '/' + p,
    });
  }
  return parts;
}

export function Composer({ sessionID, busy }) {
  // The draft is kept in this browser per session, so a reload, a restart or a sign-in loses nothing.
  const [text, setTextState] = useState(() => loadDraft(sessionID));
  const setText = (t) => {
    setTextState(t);
    saveDraft(sessionID, t);
  };
  const [sending, setSending] = useState(false);
  const [connecting, setConnecting] = useState(false);
  const [attachments, setAttachments] = useState([]);
  const [pastes, setPastes] = useState({}); // n -> text
  const [openPaste, setOpenPaste] = useState(null);
  const [caret, setCaret] = useState(0);
  const [menuIndex, setMenuIndex] = useState(0);
  const [dismissed, setDismissed] = useState(null); // the text the menu was closed on (Esc)
  const [files, setFiles] = useState({ query: null, list: [] });
  const completed = useRef(new Set());
  const input = useRef(null);
  useEffect(() => {
    loadCommands();
    // A session just made with + New (or Ctrl+Alt+N) opens ready to type.
    if (takeComposerFocus(sessionID)) input.current?.focus();
  }, []);
  // Edit (answer.jsx) puts a prompt's text here to be changed and sent again.
  useEffect(() => {
    const compose = (e) => {
      if (e.detail?.sessionID !== sessionID) return;
      setText(e.detail.text);
      input.current?.focus();
    };
    window.addEventListener('tandem:compose', compose);
    return () => window.removeEventListener('tandem:compose', compose);
  }, [sessionID]);
  const c = sessionChoice(sessionID);
  const models = modelOptions();

  // ----- the menu: commands after a leading "/", files after "@" -----
  const before = text.slice(0, caret);
  const slash = /^\/(\S*)$/.exec(before);
  const at = !slash && /(^|\s)@([^\s@]*)$/.exec(before);
  const fileQuery = at ? at[2] : null;
  useEffect(() => {
    if (!fileQuery) return;
    let live = true;
    const t = setTimeout(() => {
      get(`/find/file?query=${enc(fileQuery)}&limit=8`)
        .then((list) => live && setFiles({ query: fileQuery, list: Array.isArray(list) ? list : [] }))
        .catch((e) => live && e.status !== 401 && setFiles({ query: fileQuery, list: [] }));
    }, 80);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [fileQuery]);
  let menu = null;
  if (dismissed !== text) {
    if (slash) {
      const q = slash[1].toLowerCase();
      const items = allCommands()
        .filter((cmd) => cmd.name.toLowerCase().includes(q))
        .sort((a, b) => Number(!a.name.toLowerCase().startsWith(q)) - Number(!b.name.toLowerCase().startsWith(q)));
      if (items.length) menu = { kind: 'command', items };
    } else if (fileQuery && files.query === fileQuery && files.list.length) {
      menu = { kind: 'file', items: files.list };
    }
  }
  const index = menu ? Math.min(menuIndex, menu.items.length - 1) : 0;

  const track = (e) => setCaret(e.currentTarget.selectionStart ?? e.currentTarget.value.length);
  const placeCaret = (pos) => {
    requestAnimationFrame(() => {
      const el = input.current;
      if (!el) return;
      el.focus();
      el.setSelectionRange(pos, pos);
      setCaret(pos);
    });
  };

  const pick = (item) => {
    setMenuIndex(0);
    if (menu.kind === 'file') {
      const start = before.length - at[2].length;
      const next = text.slice(0, start) + item + ' ' + text.slice(caret);
      completed.current.add(item);
      setText(next);
      placeCaret(start + item.length + 1);
      return;
    }
    // A command that takes arguments waits for them; one that takes none runs at once.
    if (!item.ui && item.hints?.length) {
      const next = `/${item.name} `;
      setText(next + text.slice(caret).trimStart());
      placeCaret(next.length);
      return;
    }
    runCommand(item, '');
  };

  // ----- sending -----
  const ensureSession = async () => {
    if (sessionID) return sessionID;
    const s = await createSession();
    navigate(`#/session/${s.id}`);
    return s.id;
  };
  const done = (sid) => {
    setText('');
    setAttachments([]);
    setPastes({});
    setOpenPaste(null);
    completed.current.clear();
    // The focus leaves the composer, so that the answer keys (a, r, …) of what the turn asks are
    // keys, not text; the conversation follows the new prompt.
    if (input.current && document.activeElement === input.current) {
      input.current.blur();
      document.querySelector('[data-testid="conversation"]')?.focus({ preventScroll: true });
    }
    if (sid) window.dispatchEvent(new CustomEvent('tandem:follow', { detail: sid }));
  };
  const expand = (t) => t.replace(/\[Pasted text #(\d+), [\d,]+ characters\]/g, (whole, n) => pastes[n] ?? whole);

  const runCommand = async (cmd, args) => {
    if (sending) return;
    setSending(true);
    try {
      if (cmd.name === 'new' && cmd.ui) {
        setText('');
        navigate('#/');
        return;
      }
      if (cmd.name === 'compact' && cmd.ui) {
        if (!sessionID) throw new Error('/compact needs a session with messages.');
        const k = c.model.indexOf('/');
        if (k < 0) throw new Error('No model to write the summary with.');
        setText('');
        await post(`/session/${enc(sessionID)}/summarize`, { providerID: c.model.slice(0, k), modelID: c.model.slice(k + 1) });
        return;
      }
      const sid = await ensureSession();
      const body = { command: cmd.name, arguments: expand(args) };
      if (c.agent) body.agent = c.agent;
      if (c.model) body.model = c.model;
      if (attachments.length) body.parts = attachments.map(({ mime, url, filename }) => ({ type: 'file', mime, url, filename }));
      done(sid);
      forgetPick(sid);
      // The answer is the finished turn: it streams in meanwhile, so nothing waits for it here.
      post(`/session/${enc(sid)}/command`, body).catch(reportError);
    } catch (e) {
      reportError(e);
    } finally {
      setSending(false);
    }
  };

  const send = async () => {
    const t = text.trim();
    if ((!t && !attachments.length) || sending) return;
    const cmd = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(t);
    const known = cmd && allCommands().find((x) => x.name === cmd[1]);
    if (known) return runCommand(known, cmd[2] || '');
    setSending(true);
    try {
      const sid = await ensureSession();
      const full = expand(t);
      const dir = state.sessions[sid]?.directory;
      const parts = [...fileParts(dir, full, completed.current), ...attachments.map(({ mime, url, filename }) => ({ type: 'file', mime, url, filename }))];
      await sendPrompt(sid, full, c, parts);
      forgetPick(sid);
      done(sid);
    } catch (e) {
      reportError(e);
    } finally {
      setSending(false);
    }
  };

  // ----- pasting and dropping -----
  const attach = async (list) => {
    for (const file of list) {
      if (file.size > MAX_ATTACHMENT) {
        toast(`${file.name || 'The file'} is larger than 20 MB and was not attached.`, 'error');
        continue;
      }
      try {
        const url = await readAsDataURL(file);
        const mime = file.type || 'application/octet-stream';
        const name = file.name || (mime.startsWith('image/') ? `pasted.${mime.split('/')[1] || 'png'}` : 'pasted');
        setAttachments((a) => [...a, { id: `${Date.now()}-${a.length}`, mime, url, filename: name }]);
      } catch (e) {
        reportError(e);
      }
    }
  };
  const onPaste = (e) => {
    const dt = e.clipboardData;
    if (!dt) return;
    const filesPasted = [...dt.files];
    if (filesPasted.length) {
      e.preventDefault();
      attach(filesPasted);
      return;
    }
    const pasted = dt.getData('text/plain');
    if (pasted.length > LONG_PASTE) {
      e.preventDefault();
      const n = Math.max(0, ...Object.keys(pastes).map(Number)) + 1;
      const label = pasteLabel(n, pasted);
      const el = e.currentTarget;
      const s = el.selectionStart ?? text.length;
      const end = el.selectionEnd ?? s;
      setPastes({ ...pastes, [n]: pasted });
      setText(text.slice(0, s) + label + text.slice(end));
      placeCaret(s + label.length);
    }
  };
  const [dragging, setDragging] = useState(false);
  const onDrop = (e) => {
    setDragging(false);
    const list = [...(e.dataTransfer?.files || [])];
    if (!list.length) return;
    e.preventDefault();
    attach(list);
  };
  // Only the pastes whose label is still in the text are kept (deleting the label drops the paste).
  const livePastes = Object.entries(pastes).filter(([n, p]) => text.includes(pasteLabel(n, p)));

  return (
    <form
      class={'composer' + (dragging ? ' dragging' : '')}
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
      onDragOver={(e) => {
        if ([...(e.dataTransfer?.types || [])].includes('Files')) {
          e.preventDefault();
          setDragging(true);
        }
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      {menu && (
        <ul class="composer-menu" role="listbox" id="composer-menu" aria-label={menu.kind === 'command' ? 'Commands' : 'Files'} data-testid={menu.kind === 'command' ? 'command-menu' : 'file-menu'}>
          {menu.items.map((item, i) => (
            <li
              key={menu.kind === 'command' ? item.name : item}
              id={`composer-opt-${i}`}
              role="option"
              aria-selected={i === index ? 'true' : 'false'}
              class={i === index ? 'active' : ''}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(item);
              }}
            >
              {menu.kind === 'command' ? (
                <>
                  <code>/{item.name}</code> <span class="muted small">{item.description || (item.template || '').slice(0, 80)}</span>
                </>
              ) : (
                <code>{item}</code>
              )}
            </li>
          ))}
        </ul>
      )}
      {(attachments.length > 0 || livePastes.length > 0) && (
        <div class="chips" data-testid="composer-chips">
          {attachments.map((a) => (
            <span class="chip" key={a.id} data-testid="attachment">
              {a.mime.startsWith('image/') && <img src={a.url} alt="" />}
              <span class="name">{a.filename}</span>
              <button type="button" class="ghost" aria-label={`Remove ${a.filename}`} onClick={() => setAttachments(attachments.filter((x) => x.id !== a.id))}>
                ×
              </button>
            </span>
          ))}
          {livePastes.map(([n, p]) => (
            <span class="chip" key={'p' + n} data-testid="paste-chip">
              <button type="button" class="ghost" aria-expanded={openPaste === n ? 'true' : 'false'} onClick={() => setOpenPaste(openPaste === n ? null : n)}>
                Pasted text #{n} · {num(p.length)} characters
              </button>
            </span>
          ))}
        </div>
      )}
      {openPaste && pastes[openPaste] && (
        <pre class="paste-preview" data-testid="paste-preview">
          {pastes[openPaste]}
        </pre>
      )}
      <textarea
        rows={2}
        placeholder="Message the agent… (Enter to send, Shift+Enter for a new line, / for commands, @ for files)"
        value={text}
        onInput={(e) => {
          setText(e.currentTarget.value);
          track(e);
          setMenuIndex(0);
        }}
        onKeyUp={track}
        onClick={track}
        onPaste={onPaste}
        onKeyDown={(e) => {
          if (menu && !e.isComposing) {
            if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
              e.preventDefault();
              const n = menu.items.length;
              setMenuIndex((index + (e.key === 'ArrowDown' ? 1 : n - 1)) % n);
              return;
            }
            if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') {
              e.preventDefault();
              pick(menu.items[index]);
              return;
            }
            if (e.key === 'Escape') {
              e.preventDefault();
              e.stopPropagation();
              setDismissed(text);
              return;
            }
          }
          if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            send();
          }
        }}
        aria-label="Message"
        aria-autocomplete="list"
        aria-controls={menu ? 'composer-menu' : undefined}
        aria-activedescendant={menu ? `composer-opt-${index}` : undefined}
        ref={input}
        data-testid="composer-input"
      />
      <div class="composer-bar">
        <select value={c.agent} onChange={(e) => choose(sessionID, 'agent', e.currentTarget.value)} aria-label="Agent">
          {state.agents.map((a) => (
            <option key={a.name} value={a.name}>
              {a.name}
            </option>
          ))}
        </select>
        <select
          value={c.model}
          onChange={(e) => {
            const v = e.currentTarget.value;
            if (v !== CONNECT) return choose(sessionID, 'model', v);
            e.currentTarget.value = c.model;
            setConnecting(true);
          }}
          aria-label="Model"
          class="model"
        >
          {[...new Set(models.map((m) => m.group))].map((g) => (
            <optgroup key={g} label={g}>
              {models
                .filter((m) => m.group === g)
                .map((m) => (
                  <option key={m.value} value={m.value}>
                    {m.label}
                  </option>
                ))}
            </optgroup>
          ))}
          <option value={CONNECT}>Connect a provider…</option>
        </select>
        {connecting && (
          <ConnectProvider
            onClose={() => setConnecting(false)}
            onDone={(model) => {
              if (model) choose(sessionID, 'model', model);
              setConnecting(false);
            }}
          />
        )}
        <span class="spacer" />
        {sessionID && <Meter sessionID={sessionID} />}
        {busy && sessionID && (
          <button type="button" class="danger" onClick={() => abortSession(sessionID).catch(reportError)} data-testid="abort">
            Abort
          </button>
        )}
        <button class="primary" type="submit" disabled={sending || (!text.trim() && !attachments.length)} data-testid="send">
          Send
        </button>
      </div>
    </form>
  );
}
