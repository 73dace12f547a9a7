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
    // Back to the Share button; the menu that held it may be folded (a phone): then to its "⋯".
    const back = opened?.back;
    const share = document.querySelector('[data-testid="share"]');
    const target = [back, share].find((el) => el?.isConnected && el.offsetParent) || document.querySelector('[data-testid="head-more"]');
    target?.focus();
  };
  const doneRef = useRef(done);
  doneRef.current = done;
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
  // The focus starts on the dialog's main button (or the dialog, while that button is busy).
  useEffect(() => {
    const primary = box.current?.querySelector('button.primary:not([disabled])');
    if (primary) primary.focus();
    else if (!box.current?.contains(document.activeElement)) box.current?.focus();
  }, [url, busy]);
  // A modal dialog: Tab and Shift+Tab cycle inside it, Esc closes it wherever the focus is (a
  // button that went away, such as Unshare, leaves it on the page), and no key reaches the page's
  // shortcuts while it is open.
  useEffect(() => {
    const onKey = (e) => {
      const el = box.current;
      if (!el) return;
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        doneRef.current();
        return;
      }
      const inside = el.contains(document.activeElement);
      if (e.key === 'Tab') {
        const stops = [...el.querySelectorAll('button:not([disabled]), input, select, textarea, a[href]')];
        if (!stops.length) return;
        const first = stops[0];
        const last = stops[stops.length - 1];
        const at = document.activeElement;
        if (!inside || (e.shiftKey && (at === first || at === el)) || (!e.shiftKey && at === last)) {
          e.preventDefault();
          (e.shiftKey ? last : first).focus();
        }
      }
      if (!inside) e.stopPropagation();
    };
    document.addEventListener('keydown', onKey, true);
    return () => document.removeEventListener('keydown', onKey, true);
  }, []);
  const onKey = (e) => {
    e.stopPropagation(); // keys typed here are not the pending panel's shortcuts
  };
  return (
    <div class="modal-backdrop" onClick={(e) => e.target === e.currentTarget && done()}>
      <div class="modal card share-box" role="dialog" aria-modal="true" aria-labelledby="share-title" tabIndex={-1} onKeyDown={onKey} ref={box} data-testid="share-dialog">
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
