import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './style.css';
import { useStore, state, start, login, logout, pendingList, dismissToast, dismissLost } from './store.js';
import { SessionList, SessionView, Composer } from './session.jsx';
import { PendingDialog, PendingBadge } from './pending.jsx';
import { PushToggle } from './push.jsx';
import { TerminalView } from './terminal.jsx';
import { McpView } from './mcp.jsx';
import { PermissionsView } from './permissions.jsx';
import { SharedSession } from './share.jsx';
import { ConfirmDialog } from './confirm.jsx';
import { PairButton, PairedNotice, PairLanding } from './pair.jsx';
import { OutageBanner } from './outage.jsx';
import { loadMarkdown } from './longtext.jsx';

const connLabel = {
  connecting: 'Connecting',
  live: 'Live',
  reconnecting: 'Reconnecting',
  offline: 'Offline',
  stopped: 'Server stopped',
};

function Header({ pending }) {
  const r = state.route;
  const tab = (href, label, active) => (
    <a href={href} class={active ? 'active' : ''} aria-current={active ? 'page' : undefined}>
      {label}
    </a>
  );
  return (
    <header class="topbar">
      <a class="brand" href="#/" aria-label="tandem">
        <span class="logo" aria-hidden="true" />
        <span class="brand-name">tandem</span>
      </a>
      <nav>
        {tab(state.lastSession && state.sessions[state.lastSession] ? `#/session/${state.lastSession}` : '#/', 'Sessions', r.view === 'sessions' || r.view === 'session')}
        {tab('#/terminal', 'Terminal', r.view === 'terminal')}
        {tab('#/mcp', 'MCP', r.view === 'mcp')}
        {tab('#/permissions', 'Permissions', r.view === 'permissions')}
      </nav>
      <span class="spacer" />
      <span class={'conn ' + state.conn} title={connLabel[state.conn]} data-testid="conn" data-state={state.conn}>
        <span class="dot" />
        <span class="conn-label">{connLabel[state.conn]}</span>
      </span>
      <PairButton />
      <PushToggle />
      <PendingBadge count={pending} />
      <button class="ghost logout" onClick={logout} title="Log out" aria-label="Log out" data-testid="logout">
        <span class="logout-label">Log out</span>
        <svg class="logout-icon" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true">
          <path d="M6 2H3v12h3M10 5l3 3-3 3M13 8H6" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round" />
        </svg>
      </button>
    </header>
  );
}

function Login() {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await login(username.trim(), password);
    } catch (err) {
      setError(err.status === 401 ? 'Wrong user name or password.' : err.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="login">
      <form class="card" onSubmit={submit} data-testid="login-form">
        <div class="brand big">
          <span class="logo" aria-hidden="true" /> tandem
        </div>
        {state.signedOut && (
          <div class="notice" role="status" data-testid="signed-out">
            You were signed out (the password changed, or you logged out in another tab). Sign in again; what you were typing is kept.
          </div>
        )}
        {state.route.expired && (
          <div class="error-box" role="alert">
            That login link has expired or was already used. Sign in with the password, or run <code>tandem web</code> again.
          </div>
        )}
        <p class="muted">
          Run <code>tandem web</code> on the server’s machine to get a one-time login link, or sign in with the server password.
        </p>
        <label>
          User name
          <input autocomplete="username" value={username} placeholder="tandem" onInput={(e) => setUsername(e.currentTarget.value)} />
        </label>
        <label>
          Password
          <input type="password" autocomplete="current-password" value={password} required onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        {error && (
          <div class="error-box" role="alert">
            {error}
          </div>
        )}
        <button class="primary" type="submit" disabled={busy || !password}>
          Sign in
        </button>
      </form>
    </div>
  );
}

function Toasts() {
  return (
    <div class="toasts" aria-live="polite">
      {state.lost.map((l) => (
        <div key={l.id} class="toast lost" role="alert" data-testid="lost-draft">
          <div>
            A form from {l.server} was {l.verb} in another client{l.client ? ` (${l.client})` : ''} before you sent it. What you typed was not sent:
          </div>
          <dl>
            {l.values.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{Array.isArray(v) ? v.join(', ') : String(v)}</dd>
              </div>
            ))}
          </dl>
          <div class="actions">
            <button
              onClick={() => navigator.clipboard?.writeText(l.values.map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : v}`).join('\n')).catch(() => {})}
            >
              Copy
            </button>
            <button onClick={() => dismissLost(l.id)}>Dismiss</button>
          </div>
        </div>
      ))}
      {state.toasts.map((t) => (
        <div key={t.id} class={'toast ' + t.kind} data-testid="toast" onClick={() => dismissToast(t.id)}>
          {t.text}
        </div>
      ))}
    </div>
  );
}

function App() {
  useStore();
  const pending = pendingList().length;
  useEffect(() => {
    document.title = pending ? `(${pending}) tandem` : 'tandem';
  }, [pending]);
  if (state.auth === 'login')
    return (
      <>
        <Login />
        <Toasts />
      </>
    );
  // Until sign-in is known the HTML shell in index.html stays (it hides once #app has content).
  if (state.auth === 'unknown') return null;
  const r = state.route;
  const inSessions = r.view === 'sessions' || r.view === 'session';
  return (
    <div class={'app view-' + r.view + (state.pendingOpen && pending ? ' pending-open' : '')}>
      <Header pending={pending} />
      <OutageBanner />
      <PairedNotice />
      <main>
        {inSessions && (
          <div class="split">
            <SessionList activeID={r.id} />
            <section class="main-pane">
              {r.view === 'session' ? (
                <SessionView id={r.id} key={r.id} />
              ) : (
                <div class="session">
                  <div class="conversation">
                    <div class="empty-convo muted">
                      <h2>Start a session</h2>
                      <p>Type a message below to create a session, or pick one from the list.</p>
                      <p>
                        With the offline demo model try <code>run: echo hi</code> or <code>ask: Which DB? | Postgres | SQLite</code>.
                      </p>
                    </div>
                  </div>
                  <Composer sessionID={null} />
                </div>
              )}
            </section>
          </div>
        )}
        <TerminalView visible={r.view === 'terminal'} activeID={r.view === 'terminal' ? r.id : null} />
        {r.view === 'mcp' && <McpView />}
        {r.view === 'permissions' && <PermissionsView />}
      </main>
      <PendingDialog />
      <ConfirmDialog />
      <Toasts />
      <div class="sr-only" role="status" aria-live="assertive" data-testid="pending-announce">
        {state.announce}
      </div>
    </div>
  );
}

const shared = location.pathname.match(/^\/s\/([A-Za-z0-9_-]+)$/);
if (location.pathname === '/pair') {
  // A pairing link: its code signs this device in, then the inbox opens.
  render(<PairLanding />, document.getElementById('app'));
} else if (shared) {
  // A read-only link: no sign-in, no event stream, nothing but that one session.
  render(<SharedSession token={shared[1]} />, document.getElementById('app'));
} else {
  render(<App />, document.getElementById('app'));
  start();
}
// The Markdown renderer, which the page's head has started fetching, is made ready once the first
// screen is drawn, before any answer needs it.
(window.requestIdleCallback || setTimeout)(() => loadMarkdown().catch(() => {}));
