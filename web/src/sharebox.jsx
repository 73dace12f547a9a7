// Share in the session header: gives the session a read-only link (POST /session/{id}/share),
// shows it with Copy, and Unshare revokes it (DELETE). The link is the session's
// `share.url`, so every tab and device shows the same one, and an unshare elsewhere shows here.
import { useEffect, useRef, useState } from 'preact/hooks';
import { state, changed, reportError } from './store.js';
import { post, del, enc } from './api.js';
import { flash } from './convo.jsx';

// The button sits in the header's menu, which a phone folds away: the dialog is rendered by the
// session view (ShareDialog), outside the menu, and opened through state.shareOpen.
export function ShareButton({ id }) {
  const shared = !!state.sessions[id]?.share?.url;
  const open = () => {
    state.shareOpen = { id, back: document.activeElement };
    changed();
  };
  return (
    <button class="ghost" onClick={open} title={shared ? 'This session has a read-only link' : 'Give this session a read-only link'} data-testid="share">
      {shared ? 'Shared' : 'Share'}
    </button>
  );
}

export function ShareDialog({ id }) {
  const url = state.sessions[id]?.share?.url || '';
  const [busy, setBusy] = useState(false);
  const box = useRef(null);
  const opened = state.shareOpen;
  const done = () => {
    state.shareOpen = null;
    changed();
    const back = opened?.back;
    // The menu that held Share may be folded (a phone): then the focus goes to its "⋯".
    if (back?.isConnected && back.offsetParent) back.focus();
    else document.querySelector('[data-testid="head-more"]')?.focus();
  };
  const run = async (fn) => {
    setBusy(true);
    try {
      const s = await fn();
      if (s?.id) state.sessions[s.id] = s;
      changed();
    } catch (e) {
      reportError(e);
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    box.current?.querySelector('button.primary')?.focus();
  }, [url]);
  const onKey = (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      done();
    }
    e.stopPropagation(); // keys typed here are not the pending panel's shortcuts
  };
  return (
    <div class="modal-backdrop" onClick={(e) => e.target === e.currentTarget && done()}>
      <div class="modal card share-box" role="dialog" aria-modal="true" aria-labelledby="share-title" onKeyDown={onKey} ref={box} data-testid="share-dialog">
        <h3 id="share-title">Share this session</h3>
        {url ? (
          <>
            <p>Anyone with this link can read the conversation, without a password, until you unshare it. Paths in the project are shown relative to it; the project’s directory is left out.</p>
            <input class="share-url" readOnly value={url} aria-label="Read-only link" onFocus={(e) => e.currentTarget.select()} data-testid="share-url" />
          </>
        ) : (
          <p>A read-only link lets anyone who has it read this conversation (no composer, no approvals, no other session) until you unshare it.</p>
        )}
        <div class="actions">
          <button onClick={done} data-testid="share-close">
            Close
          </button>
          {url ? (
            <>
              <button class="danger" disabled={busy} onClick={() => run(() => del(`/session/${enc(id)}/share`))} data-testid="unshare">
                Unshare
              </button>
              <button class="primary" onClick={(e) => flash(e.currentTarget, url)} data-testid="share-copy">
                Copy
              </button>
            </>
          ) : (
            <button class="primary" disabled={busy} onClick={() => run(() => post(`/session/${enc(id)}/share`, {}))} data-testid="share-create">
              Create link
            </button>
          )}
        </div>
      </div>
    </div>
  );
}
