// When the server is gone: a banner that says so plainly (a crash or a stop, not only a small
// "Reconnecting" in the corner), that nothing typed is lost, and that tandem keeps trying; and, in
// the terminal view, which shells are gone after a restart, since their processes died with it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { state, toast, openEvents } from './store.js';
import './outage.css';

// A reconnect that takes longer than this is an outage worth a banner.
const graceMs = 3000;

export function OutageBanner() {
  const conn = state.conn;
  const down = conn === 'offline' || conn === 'stopped' || conn === 'reconnecting';
  const [late, setLate] = useState(false);
  const wasDown = useRef(false);
  useEffect(() => {
    if (!down) {
      if (wasDown.current) toast('Connected to the server again.', 'info');
      wasDown.current = false;
      setLate(false);
      return undefined;
    }
    const t = setTimeout(() => {
      wasDown.current = true;
      setLate(true);
    }, graceMs);
    return () => clearTimeout(t);
  }, [down]);
  if (!down || (!late && conn !== 'stopped')) return null;
  return (
    <div class="outage" role="alert" data-testid="outage" data-state={conn}>
      <div>
        <strong>{conn === 'stopped' ? 'The tandem server stopped.' : 'The tandem server is not answering.'}</strong>{' '}
        {conn === 'stopped' ? 'It shut down' : 'It may have crashed or been stopped, or the network is down'}; tandem keeps trying to reconnect.
        What you typed stays here, and the sessions are as you left them once it is back.
      </div>
      <button onClick={() => openEvents()} data-testid="outage-retry">
        Try now
      </button>
    </div>
  );
}

const lost = new Map(); // pty ID -> label, shells gone without this page closing them
const known = new Map(); // pty ID -> label, the shells this page has listed
const closedHere = new Set();

/** Notes that this page closes the terminal: its going is no news. */
export function closedByUser(id) {
  closedHere.add(id);
}

/**
 * Compares the listed terminals with those listed before: one that vanished without this page
 * closing it went with a restart of the server (or another client closed it), and is named once.
 */
export function trackTerminals(ptys, labels) {
  const now = new Set(ptys.map((p) => p.id));
  for (const [id, label] of known) {
    if (!now.has(id)) {
      known.delete(id);
      if (!closedHere.delete(id)) lost.set(id, label);
    }
  }
  for (const p of ptys) known.set(p.id, labels[p.id]);
}

export function LostTerminals() {
  const [, redraw] = useState(0);
  if (!lost.size) return null;
  const names = [...lost.values()];
  return (
    <div class="notice lost-terminals" role="status" data-testid="lost-terminals">
      <span>
        {names.join(', ')} {names.length === 1 ? 'is' : 'are'} gone: the server restarted (its shells end with it) or another client closed{' '}
        {names.length === 1 ? 'it' : 'them'}. The output is no longer available.
      </span>
      <button
        class="ghost"
        aria-label="Dismiss"
        onClick={() => {
          lost.clear();
          redraw((n) => n + 1);
        }}
      >
        ✕
      </button>
    </div>
  );
}
