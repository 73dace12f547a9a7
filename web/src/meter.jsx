// How much of the model's context window the session fills, and what it has cost: from the last
// finished assistant message's tokens (what the model was last sent and wrote back) and the
// model's context limit (GET /config/providers), and the session's own cost and tokens, which add
// up its turns.
import { state } from './store.js';
import { num } from './format.js';
import './meter.css';

const short = (n) => (n >= 10000 ? `${(n / 1000).toFixed(n >= 100000 ? 0 : 1)}k` : num(n));

function money(c) {
  if (!c) return '$0';
  return c < 0.01 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`;
}

/** The tokens a message's call held in the context: its input (cached or not), reasoning and output. */
export function contextTokens(t) {
  if (!t) return 0;
  return (t.input || 0) + (t.output || 0) + (t.reasoning || 0) + (t.cache?.read || 0) + (t.cache?.write || 0);
}

function contextLimit(providerID, modelID) {
  const p = (state.providers.providers || []).find((x) => x.id === providerID);
  return p?.models?.[modelID]?.limit?.context || 0;
}

export function Meter({ sessionID }) {
  const m = state.messages[sessionID];
  if (!m) return null;
  let last = null;
  for (const msg of Object.values(m.byId)) {
    const i = msg.info;
    if (i.role !== 'assistant' || !i.tokens || !contextTokens(i.tokens)) continue;
    if (!last || i.id > last.id) last = i;
  }
  if (!last) return null;
  const used = contextTokens(last.tokens);
  const limit = contextLimit(last.providerID, last.modelID);
  const s = state.sessions[sessionID];
  const cost = s?.cost ?? 0;
  const pct = limit ? Math.min(100, Math.round((used / limit) * 100)) : null;
  const title =
    `Context: ${num(used)} tokens${limit ? ` of ${num(limit)} (${pct}%)` : ''} in the last call to ${last.modelID}` +
    `. The session so far: ${num(s?.tokens?.input || 0)} in, ${num(s?.tokens?.output || 0)} out, ${num(s?.tokens?.cache?.read || 0)} read from the cache, ${money(cost)}.`;
  return (
    <span class={'meter' + (pct >= 80 ? ' warn' : '')} title={title} aria-label={title} data-testid="meter" data-used={used} data-limit={limit || ''}>
      {limit ? (
        <span class="meter-bar" aria-hidden="true">
          <span style={{ width: `${pct}%` }} />
        </span>
      ) : null}
      <span class="meter-text">
        {short(used)}
        {limit ? ` / ${short(limit)}` : ''} · {money(cost)}
      </span>
    </span>
  );
}
