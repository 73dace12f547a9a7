// Searching what was said in sessions, not only their titles: GET /session/search on the server
// (an index of the conversation's text), asked as the person types.
import { useEffect, useState } from 'preact/hooks';
import { state, changed } from './store.js';
import { get, enc } from './api.js';
import './extras.css';

/** The content hits for q, by session ID; {} while q is empty. Debounced, stale answers dropped. */
export function useContentSearch(q) {
  const [hits, setHits] = useState({});
  const needle = q.trim();
  useEffect(() => {
    if (!needle) {
      setHits({});
      return;
    }
    let live = true;
    const timer = setTimeout(async () => {
      try {
        const list = await get(`/session/search?query=${enc(needle)}&limit=50`);
        if (!live) return;
        const byId = {};
        for (const h of list || []) {
          byId[h.session.id] = h;
          // A session found by its text may not be listed yet (an older page): show it.
          if (!state.sessions[h.session.id]) state.sessions[h.session.id] = h.session;
        }
        setHits(byId);
        changed();
      } catch {
        if (live) setHits({});
      }
    }, 200);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [needle]);
  return hits;
}

/** The text around a match, the match marked. */
export function Snippet({ hit }) {
  const s = hit.snippet || '';
  const [at, n] = hit.match || [0, 0];
  // A narrow list shows the match, with a little of what comes before it.
  let before = s.slice(0, at);
  if (before.length > 24) before = '…' + before.slice(-24).replace(/^\S*\s/, '');
  return (
    <span class="search-hit" data-testid="search-hit" title={s}>
      {before}
      <mark>{s.slice(at, at + n)}</mark>
      {s.slice(at + n)}
    </span>
  );
}
