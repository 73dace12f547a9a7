// The model and agent a session's composer sends with. A session keeps the ones its last prompt
// used (the `model` and `agent` of its last user message, which every device reads the same); one
// picked in this browser and not yet sent is kept per session in localStorage, so a reload keeps
// it too. A new session starts with the server's default (state.composer).
import { state, changed, modelOptions } from './store.js';

const pickKey = (sid) => `tandem.pick.${sid}`;

function loadPick(sid) {
  if (state.picks?.[sid]) return state.picks[sid];
  try {
    return JSON.parse(localStorage.getItem(pickKey(sid)) || 'null');
  } catch {
    return null;
  }
}

function lastUserMessage(sid) {
  const m = state.messages[sid];
  if (!m) return null;
  let last = null;
  for (const msg of Object.values(m.byId)) {
    if (msg.info.role !== 'user') continue;
    if (!last || msg.info.id > last.info.id) last = msg;
  }
  return last?.info || null;
}

/** {agent, model} for sessionID ("provider/model"), null sessionID meaning a session not yet created. */
export function sessionChoice(sid) {
  const c = state.composer;
  if (!sid) return { agent: c.agent, model: c.model };
  const models = modelOptions();
  const offered = (v) => v && models.some((m) => m.value === v);
  const agentKnown = (a) => a && state.agents.some((x) => x.name === a);
  const info = lastUserMessage(sid);
  const pick = loadPick(sid);
  // A pick made after the last prompt (on this device) wins; a prompt sent later (from anywhere) wins over it.
  const pickIsNewer = pick && (!info || (pick.at || 0) > (info.time?.created || 0));
  let model = '';
  let agent = '';
  if (pickIsNewer) {
    model = offered(pick.model) ? pick.model : '';
    agent = agentKnown(pick.agent) ? pick.agent : '';
  }
  if (info) {
    const sent = info.model?.providerID ? `${info.model.providerID}/${info.model.modelID}` : '';
    if (!model && offered(sent)) model = sent;
    if (!agent && agentKnown(info.agent)) agent = info.agent;
  }
  return { agent: agent || c.agent, model: model || c.model };
}

/** Remembers a choice made in sessionID's composer (what: "model" or "agent"). */
export function choose(sid, what, value) {
  if (!sid) {
    state.composer[what] = value;
    changed();
    return;
  }
  const cur = sessionChoice(sid);
  const next = { ...cur, [what]: value, at: Date.now() };
  state.picks = { ...state.picks, [sid]: next };
  try {
    localStorage.setItem(pickKey(sid), JSON.stringify(next));
  } catch {
    /* storage full or disabled: the choice lasts until the next prompt is sent */
  }
  changed();
}

/** Forgets sessionID's unsent pick once a prompt carried it: from then on its messages say it. */
export function forgetPick(sid) {
  if (state.picks) delete state.picks[sid];
  try {
    localStorage.removeItem(pickKey(sid));
  } catch {
    /* nothing stored */
  }
}
