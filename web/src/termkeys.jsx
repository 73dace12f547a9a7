// The keys a phone's keyboard lacks, in a row above the terminal on narrow screens: Esc, Ctrl (held
// for the next key: Ctrl then c sends ^C), Tab and the arrows. The row never takes the focus, so the
// phone's keyboard stays open on the terminal.
import { changed } from './store.js';

/** What Ctrl+key sends: the letters and @[\]^_ map to their control codes, ? to DEL. */
export function withCtrl(d) {
  if (d.length !== 1) return d;
  const c = d.toUpperCase().charCodeAt(0);
  if (c >= 64 && c <= 95) return String.fromCharCode(c - 64);
  if (d === ' ') return '\x00';
  if (d === '?') return '\x7f';
  return d;
}

/** An arrow as the terminal expects it: SS3 in application cursor mode (vim, less), CSI otherwise. */
function arrow(term, letter) {
  return (term.modes?.applicationCursorKeysMode ? '\x1bO' : '\x1b[') + letter;
}

const keys = [
  { label: 'Esc', name: 'Escape', send: () => '\x1b' },
  { label: 'Tab', name: 'Tab', send: () => '\t' },
  { label: '←', name: 'Left', aria: 'Left arrow', send: (t) => arrow(t, 'D') },
  { label: '↑', name: 'Up', aria: 'Up arrow', send: (t) => arrow(t, 'A') },
  { label: '↓', name: 'Down', aria: 'Down arrow', send: (t) => arrow(t, 'B') },
  { label: '→', name: 'Right', aria: 'Right arrow', send: (t) => arrow(t, 'C') },
];

export function TermKeys({ session }) {
  const keep = (e) => e.preventDefault(); // a tap must not move the focus off the terminal
  const press = (fn) => () => {
    let d = fn(session.term);
    if (session.ctrl && d.length === 1) d = withCtrl(d);
    if (session.ctrl) {
      session.ctrl = false;
      changed();
    }
    session.send(d);
    session.term.focus();
  };
  const toggleCtrl = () => {
    session.ctrl = !session.ctrl;
    changed();
    session.term.focus();
  };
  return (
    <div class="term-keys" role="toolbar" aria-label="Terminal keys" data-testid="term-keys">
      <button type="button" onMouseDown={keep} onClick={press(keys[0].send)} data-key="Escape">
        Esc
      </button>
      <button type="button" class={session.ctrl ? 'held' : ''} onMouseDown={keep} onClick={toggleCtrl} aria-pressed={session.ctrl} title="Control, for the next key" data-key="Ctrl">
        Ctrl
      </button>
      {keys.slice(1).map((k) => (
        <button type="button" key={k.name} onMouseDown={keep} onClick={press(k.send)} aria-label={k.aria} data-key={k.name}>
          {k.label}
        </button>
      ))}
    </div>
  );
}
