import { useEffect, useState } from 'preact/hooks';
import { Message } from './session.jsx';

// The page of a read-only link (/s/{token}): one session, read through /s/{token}/… with the token
// as the only key. No cookie is sent, so a browser signed in to tandem shows exactly what anyone
// with the link sees. It refreshes every few seconds while open.
async function read(path) {
  const res = await fetch(path, { credentials: 'omit', headers: { Accept: 'application/json' } });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.data?.message || `HTTP ${res.status}`);
  return body;
}

export function SharedSession({ token }) {
  const [session, setSession] = useState(null);
  const [msgs, setMsgs] = useState([]);
  const [error, setError] = useState(null);
  useEffect(() => {
    let stopped = false;
    let timer;
    const load = async () => {
      try {
        const [s, m] = await Promise.all([read(`/s/${token}/session`), read(`/s/${token}/message`)]);
        if (stopped) return;
        setSession(s);
        setMsgs(m);
        setError(null);
        document.title = `${s.title} · tandem (read-only)`;
      } catch (e) {
        if (!stopped) setError(e.message);
      }
      if (!stopped) timer = setTimeout(load, 3000);
    };
    load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [token]);
  return (
    <div class="app view-share">
      <header class="topbar">
        <span class="brand">
          <span class="logo" aria-hidden="true" />
          tandem
        </span>
        <span class="spacer" />
        <span class="muted small" data-testid="read-only">
          Read-only link
        </span>
      </header>
      <main>
        <div class="session">
          <div class="session-head">
            <h2 data-testid="session-title">{session ? session.title : error ? 'Link unavailable' : 'Loading…'}</h2>
          </div>
          <div class="conversation" data-testid="conversation">
            {error && (
              <div class="error-box" role="alert" data-testid="share-error">
                {error}
              </div>
            )}
            {msgs.map((msg, i) => (
              <Message key={msg.info.id} msg={msg} shared last={i === msgs.length - 1 || msgs[i + 1].info.role === 'user'} />
            ))}
          </div>
        </div>
      </main>
    </div>
  );
}
