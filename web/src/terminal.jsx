// Shells over the PTY WebSocket. Each tab keeps its xterm and its byte
// cursor, so a dropped connection resumes exactly where it stopped.
import { useEffect, useRef } from 'preact/hooks';
import { nextShellTitle, tabLabels } from './termnames.js';
import { TermKeys, withCtrl } from './termkeys.jsx';
import { LostTerminals, closedByUser, trackTerminals } from './outage.jsx';
import { state, changed, navigate, reportError } from './store.js';
import { post, del, enc } from './api.js';

const encoder = new TextEncoder();

let xterm = null;

/**
 * Loads xterm.js, which is most of the UI's code, only when a terminal is first shown, so that a
 * phone on a slow link does not fetch and parse it before the inbox can be used.
 */
function loadXterm() {
  xterm ||= Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit'), import('@xterm/xterm/css/xterm.css')]).then(
    ([x, f]) => ({ Terminal: x.Terminal, FitAddon: f.FitAddon }),
    (e) => {
      xterm = null; // a failed download is tried again next time
      throw e;
    },
  );
  return xterm;
}

function theme() {
  const dark = matchMedia('(prefers-color-scheme: dark)').matches;
  return dark
    ? { background: '#0d1117', foreground: '#d6dde6', cursor: '#d6dde6', selectionBackground: '#264f78' }
    : { background: '#ffffff', foreground: '#1f2328', cursor: '#1f2328', selectionBackground: '#b6d7ff' };
}

class TermSession {
  constructor(id, { Terminal, FitAddon }) {
    this.id = id;
    this.cursor = null; // byte offset of the next output byte we have not seen
    this.disposed = false;
    this.retry = 500;
    this.el = document.createElement('div');
    this.el.className = 'xterm-host';
    this.term = new Terminal({ fontSize: 13, fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', theme: theme(), scrollback: 5000, cursorBlink: true });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.opened = false;
    this.ctrl = false; // the phone key row's Ctrl, waiting for the next key
    this.term.onData((d) => {
      if (this.ctrl) {
        this.ctrl = false;
        d = withCtrl(d);
        changed();
      }
      this.send(d);
    });
    this.connect();
  }

  /** Sends input to the shell, as typed. */
  send(d) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(d);
  }

  attach(parent) {
    if (this.el.parentNode !== parent) parent.appendChild(this.el);
    if (!this.opened) {
      this.term.open(this.el);
      this.opened = true;
    }
    this.resize();
  }

  // This viewer's window size is reported over the WebSocket; the server sizes the terminal to the
  // largest of its viewers (a phone never shrinks it for a desktop) and says which size that is, and
  // the terminal is shown at that size, scrolling where this window is smaller.
  resize() {
    if (!this.opened || !this.el.offsetWidth || !this.el.offsetHeight) return;
    let dims;
    try {
      dims = this.fit.proposeDimensions();
    } catch {
      return;
    }
    if (!dims || !dims.rows || !dims.cols) return;
    const { rows, cols } = dims;
    if (!this.shown) this.term.resize(cols, rows);
    if (rows === this.rows && cols === this.cols) return;
    this.rows = rows;
    this.cols = cols;
    clearTimeout(this.resizeTimer);
    this.resizeTimer = setTimeout(() => this.sendSize(), 150);
  }

  sendSize() {
    if (!this.rows || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(encoder.encode('\0' + JSON.stringify({ size: { rows: this.rows, cols: this.cols } })));
  }

  connect() {
    if (this.disposed) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const q = this.cursor === null ? '' : `?cursor=${this.cursor}`;
    const ws = new WebSocket(`${proto}//${location.host}/pty/${enc(this.id)}/connect${q}`);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let live = false;
    ws.onopen = () => {
      this.retry = 500;
      this.setStatus('connected');
      this.sendSize();
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data === 'string') {
        this.term.write(ev.data);
        if (live && this.cursor !== null) this.cursor += encoder.encode(ev.data).length;
        return;
      }
      const bytes = new Uint8Array(ev.data);
      if (bytes[0] === 0) {
        try {
          const meta = JSON.parse(new TextDecoder().decode(bytes.subarray(1)));
          if (typeof meta.cursor === 'number') {
            this.cursor = meta.cursor;
            live = true;
          }
          if (meta.size && meta.size.rows > 0 && meta.size.cols > 0) {
            this.shown = meta.size;
            this.term.resize(meta.size.cols, meta.size.rows);
            this.el.dataset.size = `${meta.size.rows}x${meta.size.cols}`;
          }
        } catch {
          /* not a control frame */
        }
      } else {
        this.term.write(bytes);
        if (live && this.cursor !== null) this.cursor += bytes.length;
      }
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws || this.disposed) return;
      const pty = state.ptys[this.id];
      if (ev.code === 1000 || ev.code === 4404 || !pty || pty.status === 'exited') {
        this.setStatus('closed');
        this.term.write('\r\n\x1b[2m[process exited]\x1b[0m\r\n');
        return;
      }
      this.setStatus('reconnecting');
      setTimeout(() => this.connect(), this.retry);
      this.retry = Math.min(this.retry * 2, 8000);
    };
  }

  setStatus(s) {
    this.status = s;
    changed();
  }

  dispose() {
    this.disposed = true;
    if (this.ws) this.ws.close();
    this.term.dispose();
    this.el.remove();
  }
}

const sessions = new Map();

function termFor(id, lib) {
  let t = sessions.get(id);
  if (!t) {
    t = new TermSession(id, lib);
    sessions.set(id, t);
  }
  return t;
}

export async function newTerminal() {
  try {
    const pty = await post('/pty', { title: nextShellTitle(Object.values(state.ptys)) });
    state.ptys[pty.id] = pty;
    changed();
    navigate(`#/terminal/${pty.id}`);
  } catch (e) {
    reportError(e);
  }
}

async function closeTerminal(id) {
  closedByUser(id);
  try {
    await del(`/pty/${enc(id)}`);
  } catch (e) {
    if (e.status !== 404) reportError(e);
  }
  delete state.ptys[id];
  const t = sessions.get(id);
  if (t) t.dispose();
  sessions.delete(id);
  changed();
}

export function TerminalView({ visible, activeID }) {
  const host = useRef(null);
  const ptys = Object.values(state.ptys).sort((a, b) => (a.id < b.id ? -1 : 1));
  const active = ptys.find((p) => p.id === activeID) || ptys[0];
  const labels = tabLabels(ptys);
  trackTerminals(ptys, labels);
  // Forget terminals whose PTY is gone.
  for (const id of [...sessions.keys()]) {
    if (!state.ptys[id]) {
      sessions.get(id).dispose();
      sessions.delete(id);
    }
  }
  useEffect(() => {
    if (!visible || !active || !host.current) return;
    let ro = null;
    let cancelled = false;
    loadXterm().then((lib) => {
      if (cancelled || !host.current || !state.ptys[active.id]) return;
      const t = termFor(active.id, lib);
      for (const other of sessions.values()) if (other !== t) other.el.style.display = 'none';
      t.el.style.display = '';
      t.attach(host.current);
      t.term.focus();
      ro = new ResizeObserver(() => t.resize());
      ro.observe(host.current);
      changed();
    }, reportError);
    return () => {
      cancelled = true;
      ro?.disconnect();
    };
  }, [visible, active?.id]);
  return (
    <div class="terminal-view" style={{ display: visible ? '' : 'none' }}>
      {/* Links between terminals, each with its Close button: a navigation, not an ARIA tab list (a tab
          cannot hold a link and a button). */}
      <nav class="tabs" aria-label="Terminals">
        {ptys.map((p) => {
          const t = sessions.get(p.id);
          return (
            <div key={p.id} class={'tab' + (active && p.id === active.id ? ' active' : '')} data-conn={t?.status || 'new'}>
              <a href={`#/terminal/${p.id}`} title={[p.command, p.cwd].filter(Boolean).join(' in ')} aria-current={active && p.id === active.id ? 'page' : undefined} data-testid="terminal-tab">
                <span class={'dot ' + (p.status === 'exited' ? 'off' : t?.status === 'reconnecting' ? 'warn' : 'ok')} />
                {labels[p.id]}
              </a>
              <button class="ghost" aria-label={`Close ${labels[p.id]}`} onClick={() => closeTerminal(p.id)}>
                ✕
              </button>
            </div>
          );
        })}
        <button class="ghost" onClick={newTerminal} data-testid="new-terminal">
          + Terminal
        </button>
      </nav>
      {active && sessions.get(active.id) && <TermKeys session={sessions.get(active.id)} />}
      <LostTerminals />
      <div class="term-host" data-testid="terminal">
        {/* Hidden while no terminal is open: it fills the pane and would cover "Open a shell". */}
        <div class="term-inner" ref={host} hidden={!active} />
        {!active && (
          <div class="empty-convo muted">
            <p>No terminal open.</p>
            <button class="primary" onClick={newTerminal}>
              Open a shell
            </button>
          </div>
        )}
      </div>
    </div>
  );
}
