// "+ New" and its shortcut, Ctrl+Alt+N (⌘⌥N on a Mac; Ctrl+Shift+O is Chrome's bookmarks): a new
// session opens with the focus in its composer, ready to type.
import { state, createSession, navigate, reportError } from './store.js';

export async function newSession() {
  const s = await createSession();
  state.focusComposer = s.id;
  navigate(`#/session/${s.id}`);
  return s;
}

/** Whether the composer of sessionID should take the focus as it appears (once). */
export function takeComposerFocus(sessionID) {
  if (!sessionID || state.focusComposer !== sessionID) return false;
  state.focusComposer = null;
  return true;
}

if (typeof document !== 'undefined') {
  document.addEventListener('keydown', (e) => {
    if (!(e.ctrlKey || e.metaKey) || !e.altKey || e.shiftKey || e.code !== 'KeyN') return;
    if (state.auth !== 'ok') return;
    e.preventDefault();
    newSession().catch(reportError);
  });
}
