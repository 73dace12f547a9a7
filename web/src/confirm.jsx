// An in-page confirmation, instead of the browser's native confirm(): styled like the app, readable
// on a phone, and answered with the keyboard (Esc cancels, the focus starts on Cancel).
import { useEffect, useRef } from 'preact/hooks';
import { state, changed } from './store.js';

/** Asks { title, body, confirm } and resolves true when the person confirms. */
export function confirmDialog({ title, body = '', confirm = 'OK', danger = false }) {
  return new Promise((resolve) => {
    state.confirm = { title, body, confirm, danger, resolve, back: document.activeElement };
    changed();
  });
}

function settle(ok) {
  const c = state.confirm;
  if (!c) return;
  state.confirm = null;
  changed();
  if (c.back && c.back.isConnected) c.back.focus();
  c.resolve(ok);
}

export function ConfirmDialog() {
  const c = state.confirm;
  const cancelRef = useRef(null);
  const okRef = useRef(null);
  useEffect(() => {
    if (c) cancelRef.current?.focus();
  }, [c]);
  if (!c) return null;
  const onKey = (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      settle(false);
    } else if (e.key === 'Tab') {
      // The focus stays in the dialog: Tab moves between its two buttons.
      e.preventDefault();
      (document.activeElement === cancelRef.current ? okRef : cancelRef).current?.focus();
    } else {
      // Keys typed here are not the pending panel's shortcuts.
      e.stopPropagation();
    }
  };
  return (
    <div class="modal-backdrop" onClick={(e) => e.target === e.currentTarget && settle(false)}>
      <div class="modal card" role="alertdialog" aria-modal="true" aria-labelledby="confirm-title" aria-describedby="confirm-body" onKeyDown={onKey} data-testid="confirm">
        <h3 id="confirm-title">{c.title}</h3>
        <p id="confirm-body">{c.body}</p>
        <div class="actions">
          <button ref={cancelRef} onClick={() => settle(false)} data-testid="confirm-cancel">
            Cancel
          </button>
          <button ref={okRef} class={c.danger ? 'danger' : 'primary'} onClick={() => settle(true)} data-testid="confirm-ok">
            {c.confirm}
          </button>
        </div>
      </div>
    </div>
  );
}
