// One mutable state tree, one SSE connection, and the actions that change
// them. Components re-render from `state` when `version` moves; updates are
// batched per animation frame so streaming deltas stay cheap.
import { useEffect, useState } from 'preact/hooks';
import { api, answer, get, post, patch, del, enc, onUnauthorized, ApiError } from './api.js';

export const state = {
  auth: 'unknown', // unknown | ok | login
  conn: 'connecting', // connecting | live | reconnecting | offline | stopped
  sessions: {},
  status: {},
  messages: {}, // sessionID -> { byId: {id: {info, parts: []}}, loaded }
  todos: {},
  diffs: {}, // sessionID -> the files it changed (GET /session/{id}/diff, session.diff)
  sessionErrors: {},
  permissions: {},
  questions: {},
  elicitations: {},
  ptys: {},
  mcp: {},
  mcpTools: null, // string[] of tool IDs, null when the server has no tool list
  agents: [],
  providers: { providers: [], default: {} },
  toasts: [],
  pendingOpen: false,
  pendingCurrent: null,
  announce: '', // what a screen reader is told when something starts waiting (the panel takes no focus)
  answeredHere: new Set(),
  route: parseRoute(),
  composer: { agent: '', model: '' },
  confirm: null, // the in-page confirmation being asked (confirm.jsx)
  shareOpen: null, // the session whose Share dialog is open, and the focus to return to (sharebox.jsx)
  formDrafts: {}, // elicitationID -> {server, values}: what is typed into a form, not yet sent
  lost: [], // forms answered elsewhere while something was typed in them: shown until dismissed
  lastSession: null, // the session last open, where the Sessions tab leads back to
};

if (state.route.view === 'session') state.lastSession = state.route.id;

let version = 0;
const listeners = new Set();
let scheduled = false;

export function changed() {
  if (scheduled) return;
  scheduled = true;
  const flush = () => {
    scheduled = false;
    version++;
    for (const l of listeners) l(version);
  };
  if (typeof requestAnimationFrame === 'function' && !document.hidden) requestAnimationFrame(flush);
  else setTimeout(flush, 0);
}

/** Subscribes the calling component to every state change. */
export function useStore() {
  const [, set] = useState(0);
  const rendered = version;
  useEffect(() => {
    listeners.add(set);
    // A change flushed before this subscribed (the page's own early answers, already there when
    // the app starts) is shown too.
    if (version !== rendered) set(version);
    return () => listeners.delete(set);
  }, []);
  return state;
}

// ---------- routing (hash based: the server owns every other path) ----------

function parseRoute() {
  const h = (typeof location !== 'undefined' ? location.hash : '').replace(/^#\/?/, '');
  const [path, query] = h.split('?');
  const [view, id] = path.split('/');
  if (view === 'login') return { view: 'sessions', expired: /(^|&)expired=1/.test(query || '') };
  // ?msg= is a search hit's message: the conversation opens scrolled to it.
  if (view === 'session' && id) return { view: 'session', id, msg: new URLSearchParams(query || '').get('msg') || null };
  if (view === 'terminal') return { view: 'terminal', id: id || null };
  if (view === 'mcp') return { view: 'mcp' };
  if (view === 'permissions') return { view: 'permissions' };
  return { view: 'sessions' };
}

if (typeof window !== 'undefined') {
  window.addEventListener('hashchange', () => {
    state.route = parseRoute();
    if (state.route.view === 'session') state.lastSession = state.route.id;
    if (state.route.view === 'session') loadMessages(state.route.id);
    changed();
  });
}

export function navigate(hash) {
  if (location.hash !== hash) location.hash = hash;
}

// ---------- toasts ----------

let toastSeq = 0;
export function toast(text, kind = 'info', ms = 6000) {
  // The same notice twice at once (three loads of a deleted session all answering 404) shows once.
  if (state.toasts.some((t) => t.text === text && t.kind === kind)) return;
  const t = { id: ++toastSeq, text, kind };
  state.toasts.push(t);
  changed();
  setTimeout(() => dismissToast(t.id), ms);
}
export function dismissToast(id) {
  state.toasts = state.toasts.filter((t) => t.id !== id);
  changed();
}

export function reportError(e) {
  if ((e instanceof ApiError && e.status === 401) || e.quiet) return;
  toast(e.message || String(e), 'error');
}

// ---------- loading ----------

onUnauthorized(() => {
  if (state.auth !== 'login') {
    // A browser that was signed in is told why the form is back (the password changed, or a logout
    // in another tab); what it was typing stays in its drafts.
    if (state.auth === 'ok') state.signedOut = true;
    state.auth = 'login';
    closeEvents();
    changed();
  }
});

const byId = (list) => Object.fromEntries((list || []).map((x) => [x.id, x]));

async function optional(path, fallback) {
  try {
    return await get(path);
  } catch (e) {
    if (e.status === 401) throw e;
    return fallback;
  }
}

/** What the UI shows at first, by the path it is read from, with what stands in when it fails. */
const snapshotPaths = [
  ['/session', null],
  ['/session/status', {}],
  ['/permission', []],
  ['/question', []],
  ['/mcp/elicitation', []],
  ['/agent', []],
  ['/config/providers', { providers: [], default: {} }],
  ['/pty', []],
  ['/mcp', {}],
];

/** Refetches everything the UI shows: at start and after a `resync`. */
export async function loadAll() {
  const answers = await Promise.all(snapshotPaths.map(([path, fallback]) => (fallback === null ? get(path) : optional(path, fallback))));
  await applySnapshot(Object.fromEntries(snapshotPaths.map(([path], i) => [path, answers[i]])));
}

/**
 * Shows a snapshot: the answers of snapshotPaths by path, fetched by loadAll or put into the page
 * by the server (a path it could not read is missing and gets its stand-in).
 */
async function applySnapshot(snap) {
  const at = (path) => snap[path] ?? snapshotPaths.find(([p]) => p === path)[1];
  state.auth = 'ok';
  state.sessions = byId(at('/session') || []);
  state.status = at('/session/status') || {};
  state.permissions = byId(at('/permission'));
  state.questions = byId(at('/question'));
  state.elicitations = byId(at('/mcp/elicitation'));
  state.agents = (at('/agent') || []).filter((a) => a.mode !== 'subagent' && !a.hidden);
  state.providers = at('/config/providers') || { providers: [], default: {} };
  state.ptys = byId(at('/pty'));
  state.mcp = at('/mcp') || {};
  pickComposerDefaults();
  if (pendingList().length) state.pendingOpen = true;
  const cur = state.route.view === 'session' ? state.route.id : null;
  for (const sid of Object.keys(state.messages)) if (sid !== cur) delete state.messages[sid];
  changed();
  if (cur) await loadMessages(cur, true);
  loadMcpTools();
  changed();
}

/** Reloads the providers and agents, keeping the composer's choice while it still exists. */
export async function refreshProviders() {
  const [agents, providers] = await Promise.all([optional('/agent', null), optional('/config/providers', null)]);
  if (agents) state.agents = agents.filter((a) => a.mode !== 'subagent' && !a.hidden);
  if (providers) state.providers = providers;
  pickComposerDefaults();
  changed();
}

function pickComposerDefaults() {
  const c = state.composer;
  if (!c.agent || !state.agents.some((a) => a.name === c.agent)) {
    c.agent = (state.agents.find((a) => a.name === 'build') || state.agents[0] || {}).name || '';
  }
  const models = modelOptions();
  if (!c.model || !models.some((m) => m.value === c.model)) {
    // The server lists the provider of its resolved default model first; `default` maps every
    // provider to its own default, so its first key (JSON objects have no order) means nothing.
    const d = state.providers.default || {};
    const pid = state.providers.providers?.[0]?.id;
    const first = pid && d[pid] ? `${pid}/${d[pid]}` : '';
    c.model = models.some((m) => m.value === first) ? first : models[0]?.value || '';
  }
}

/** Every model of every configured provider, as "providerID/modelID", grouped by provider. */
export function modelOptions() {
  const out = [];
  for (const p of state.providers.providers || []) {
    const models = p.models || {};
    for (const [id, m] of Object.entries(models)) {
      out.push({ value: `${p.id}/${id}`, label: m.name || id, group: p.name || p.id });
    }
  }
  return out;
}

/** The deltas that arrived while a session's messages were loading, by session. */
const loading = {};

/**
 * Grows a streamed part by a delta. A delta says where in the part's text it starts (`offset`), so
 * the part of it a copy loaded mid-stream already holds is skipped, and a delta that arrived while
 * the copy was loading is applied after it: nothing lost, nothing twice. (After a gap, the step's
 * final part update brings the whole text.)
 */
function applyDelta(p) {
  const part = state.messages[p.sessionID]?.byId[p.messageID]?.parts.find((x) => x.id === p.partID);
  if (!part) return;
  // The field may be a path: a running command's output streams into state.metadata.output.
  const path = String(p.field).split('.');
  const key = path.pop();
  let obj = part;
  for (const k of path) obj = obj[k] && typeof obj[k] === 'object' ? obj[k] : (obj[k] = {});
  const cur = obj[key] || '';
  if (typeof p.offset === 'number' && p.offset < cur.length) obj[key] = cur + p.delta.slice(cur.length - p.offset);
  // Output that starts past the end of this copy waits for the next whole part, which carries it.
  else if (!path.length || typeof p.offset !== 'number' || p.offset === cur.length) obj[key] = cur + p.delta;
}

export async function loadMessages(sessionID, force) {
  if (!sessionID) return;
  if (state.messages[sessionID]?.loaded && !force) return;
  const buffered = (loading[sessionID] = []);
  try {
    const [list, session] = await Promise.all([
      get(`/session/${enc(sessionID)}/message`),
      state.sessions[sessionID] ? null : get(`/session/${enc(sessionID)}`),
    ]);
    if (session) state.sessions[session.id] = session;
    const m = { byId: {}, loaded: true };
    for (const item of list || []) m.byId[item.info.id] = { info: item.info, parts: item.parts || [] };
    state.messages[sessionID] = m;
    for (const d of buffered) applyDelta(d);
    changed();
  } catch (e) {
    if (e.status === 404) {
      toast('Session not found', 'error');
      navigate('#/');
    } else reportError(e);
  } finally {
    if (loading[sessionID] === buffered) delete loading[sessionID];
  }
}

export async function loadMcpTools() {
  try {
    const ids = await get('/experimental/tool/ids');
    state.mcpTools = Array.isArray(ids) ? ids : null;
  } catch {
    state.mcpTools = null;
  }
  changed();
}

// ---------- SSE ----------

let es = null;
let lastFrame = 0;
let watchdog = null;
let retryTimer = null;
let retryDelay = 1000;
let freshConnection = true;

/**
 * Opens the event stream, or takes over the one index.html opened before this script arrived
 * (early: { es, buf }), replaying the events it kept meanwhile.
 */
export function openEvents(early) {
  closeEvents();
  freshConnection = true;
  state.conn = state.conn === 'live' ? 'reconnecting' : 'connecting';
  es = early?.es || new EventSource('/event');
  es.onmessage = (ev) => {
    lastFrame = Date.now();
    let msg;
    try {
      msg = JSON.parse(ev.data);
    } catch {
      return;
    }
    handleEvent(msg);
  };
  es.onerror = () => {
    if (!es) return;
    if (es.readyState === EventSource.CLOSED) {
      // The browser gave up (e.g. a 401 or a server restart): check auth and retry ourselves.
      scheduleReconnect();
    } else {
      state.conn = 'reconnecting';
      changed();
    }
  };
  lastFrame = Date.now();
  if (early?.es) {
    for (const ev of early.buf) es.onmessage(ev);
    if (es.readyState === EventSource.CLOSED) return scheduleReconnect();
  }
  watchdog = setInterval(() => {
    // Heartbeats come every 10 s; silence for 30 s means a dead connection.
    if (Date.now() - lastFrame > 30000) scheduleReconnect();
  }, 5000);
  changed();
}

export function closeEvents() {
  if (es) {
    es.onmessage = es.onerror = null;
    es.close();
    es = null;
  }
  clearInterval(watchdog);
  clearTimeout(retryTimer);
}

function scheduleReconnect() {
  closeEvents();
  if (state.conn !== 'stopped') state.conn = 'offline';
  changed();
  retryTimer = setTimeout(async () => {
    try {
      await get('/session/status');
      retryDelay = 1000;
      openEvents();
    } catch (e) {
      if (e.status === 401) return;
      retryDelay = Math.min(retryDelay * 2, 15000);
      scheduleReconnect();
    }
  }, retryDelay);
}

function msgStore(sessionID) {
  let m = state.messages[sessionID];
  if (!m) {
    // Only keep messages for sessions that are open; others load on demand.
    if (state.route.view !== 'session' || state.route.id !== sessionID) return null;
    m = state.messages[sessionID] = { byId: {}, loaded: false };
  }
  return m;
}

function upsertPart(part) {
  const m = msgStore(part.sessionID);
  if (!m) return;
  let msg = m.byId[part.messageID];
  if (!msg) msg = m.byId[part.messageID] = { info: { id: part.messageID, sessionID: part.sessionID, role: 'assistant', time: {} }, parts: [] };
  const i = msg.parts.findIndex((p) => p.id === part.id);
  if (i >= 0) msg.parts[i] = part;
  else {
    msg.parts.push(part);
    msg.parts.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}

function noteAnsweredElsewhere(id, what, client, verb = 'answered') {
  if (state.answeredHere.has(id)) {
    state.answeredHere.delete(id);
    return;
  }
  toast(`${what} was ${verb} in another client${client ? ` — ${client}` : ''}.`, 'info');
  keepLostDraft(id, verb, client);
}

/** A form answered elsewhere while text was typed in it: what was typed stays on screen. */
function keepLostDraft(id, verb, client) {
  const d = state.formDrafts[id];
  delete state.formDrafts[id];
  const filled = d ? Object.entries(d.values).filter(([, v]) => (Array.isArray(v) ? v.length : v !== '' && v !== false && v != null)) : [];
  if (!filled.length) return;
  state.lost.push({ id, server: d.server, verb, client, values: filled });
}

export function dismissLost(id) {
  state.lost = state.lost.filter((l) => l.id !== id);
  changed();
}

/**
 * Tells a screen reader what started waiting. The panel opens without taking the focus (it would
 * steal the keys of whoever is typing); its shortcuts work from anywhere but a text field.
 */
function announce(what) {
  const waiting = Object.keys(state.permissions).length + Object.keys(state.questions).length + Object.keys(state.elicitations).length;
  // A different text each time, so that the same request asked twice is read twice.
  const text = `Waiting for you: ${what.trim()}.${waiting > 1 ? ` ${waiting} requests wait.` : ''}`;
  state.announce = state.announce === text ? text + '\u00a0' : text;
}

export function handleEvent(msg) {
  const p = msg.properties || {};
  switch (msg.type) {
    case 'server.connected':
      state.conn = 'live';
      retryDelay = 1000;
      if (p.resync || freshConnection) {
        freshConnection = false;
        loadAll().catch(reportError);
      }
      break;
    case 'server.heartbeat':
      break;
    case 'server.instance.disposed':
      // The configuration changed (a provider connected in another tab or on another device, a
      // key removed): the model picker lists what the server lists now.
      refreshProviders().catch(reportError);
      break;
    case 'server.shutdown':
      state.conn = 'stopped';
      toast('The server is shutting down.', 'error');
      scheduleReconnect();
      break;
    case 'session.created':
    case 'session.updated':
      if (p.info) state.sessions[p.info.id] = p.info;
      break;
    case 'session.deleted': {
      const sid = p.info?.id || p.sessionID;
      if (state.lastSession === sid) state.lastSession = null;
      delete state.sessions[sid];
      delete state.messages[sid];
      if (state.route.view === 'session' && state.route.id === sid) navigate('#/');
      break;
    }
    case 'session.status':
      if (p.status?.type === 'idle') delete state.status[p.sessionID];
      else state.status[p.sessionID] = p.status;
      break;
    case 'session.idle':
      delete state.status[p.sessionID];
      break;
    case 'session.error':
      if (p.sessionID) state.sessionErrors[p.sessionID] = p.error || { data: { message: 'Unknown error' } };
      break;
    case 'message.updated': {
      const info = p.info;
      const m = info && msgStore(info.sessionID);
      if (m) {
        const cur = m.byId[info.id];
        if (cur) cur.info = info;
        else m.byId[info.id] = { info, parts: [] };
        if (info.role === 'user') delete state.sessionErrors[info.sessionID];
      }
      break;
    }
    case 'message.removed': {
      const m = state.messages[p.sessionID];
      if (m) delete m.byId[p.messageID];
      break;
    }
    case 'message.part.updated':
      if (p.part) upsertPart(p.part);
      break;
    case 'message.part.delta':
      loading[p.sessionID]?.push(p);
      applyDelta(p);
      break;
    case 'message.part.removed': {
      const msg = state.messages[p.sessionID]?.byId[p.messageID];
      if (msg) msg.parts = msg.parts.filter((x) => x.id !== p.partID);
      break;
    }
    case 'session.diff':
      if (p.sessionID && Array.isArray(p.diff)) state.diffs[p.sessionID] = p.diff;
      break;
    case 'todo.updated':
      state.todos[p.sessionID] = p.todos;
      break;
    case 'permission.asked':
      state.permissions[p.id] = p;
      state.pendingOpen = true;
      announce(`permission for ${p.permission}${p.metadata?.command ? `: ${p.metadata.command}` : p.patterns?.length ? `: ${p.patterns.join(', ')}` : ''}`);
      break;
    case 'permission.replied':
      if (state.permissions[p.requestID]) {
        delete state.permissions[p.requestID];
        noteAnsweredElsewhere(p.requestID, `Permission (${p.decision || p.reply})`, p.client);
      }
      break;
    case 'question.asked':
      state.questions[p.id] = p;
      state.pendingOpen = true;
      announce(`a question: ${p.questions?.[0]?.question || ''}`);
      break;
    case 'question.replied':
    case 'question.rejected':
      if (state.questions[p.requestID]) {
        delete state.questions[p.requestID];
        // tandem says why a question ended unanswered (cause: reject, timeout, cancel); OpenCode does not.
        const ended =
          msg.type === 'question.rejected' &&
          { timeout: 'A question timed out before it was answered.', cancel: 'A question was withdrawn: its turn ended.' }[p.cause];
        if (ended) {
          state.answeredHere.delete(p.requestID);
          toast(ended, 'info');
        } else {
          noteAnsweredElsewhere(p.requestID, 'A question', p.client, msg.type === 'question.rejected' ? 'dismissed' : 'answered');
        }
      }
      break;
    case 'mcp.elicitation.asked': {
      const e = p.elicitation || p;
      state.elicitations[e.id] = e;
      state.pendingOpen = true;
      announce(`a form from ${e.server || 'an MCP server'}: ${e.message || ''}`);
      break;
    }
    case 'mcp.elicitation.replied':
      if (state.elicitations[p.id]) {
        delete state.elicitations[p.id];
        noteAnsweredElsewhere(p.id, `A form from ${state.formDrafts[p.id]?.server || 'MCP'}`, p.client, { accept: 'sent', decline: 'declined', cancel: 'cancelled' }[p.action] || 'answered');
      }
      break;
    case 'mcp.elicitation.completed':
      if (state.elicitations[p.id]) {
        delete state.elicitations[p.id];
        state.answeredHere.delete(p.id);
        toast('The MCP server reports the request as completed.', 'info');
      }
      break;
    case 'pty.created':
    case 'pty.updated':
      if (p.info) state.ptys[p.info.id] = p.info;
      break;
    case 'pty.exited':
      if (state.ptys[p.id]) state.ptys[p.id] = { ...state.ptys[p.id], status: 'exited', exitCode: p.exitCode };
      break;
    case 'pty.deleted':
      delete state.ptys[p.id];
      break;
    case 'mcp.status.changed': {
      // {server, status, error?, sessionID?}: a server added by another client appears here at once.
      const name = p.server || p.name;
      if (name && typeof p.status === 'string') {
        state.mcp[name] = { status: p.status };
        if (p.error) state.mcp[name].error = p.error;
        if (p.sessionID) state.mcp[name].sessionID = p.sessionID;
      } else if (name) state.mcp[name] = p.status;
      break;
    }
    case 'mcp.server.removed':
      delete state.mcp[p.server];
      break;
    case 'mcp.tools.changed':
      loadMcpTools();
      break;
    default:
      return;
  }
  changed();
}

// ---------- pending ----------

/** Everything waiting for a human, oldest first. */
export function pendingList() {
  const all = [
    ...Object.values(state.permissions).map((x) => ({ kind: 'permission', id: x.id, item: x })),
    ...Object.values(state.questions).map((x) => ({ kind: 'question', id: x.id, item: x })),
    ...Object.values(state.elicitations).map((x) => ({ kind: 'elicitation', id: x.id, item: x })),
  ];
  return all.sort((a, b) => (a.id.slice(4) < b.id.slice(4) ? -1 : 1));
}

/**
 * Whether a request waits on session sid: asked in it, or by one of its subagents (their child
 * sessions name their parent and root), so the person looking at the parent sees and answers it.
 */
export const waitsOn = (req, sid) => req.sessionID === sid || req.parentSessionID === sid || req.rootSessionID === sid;

function settled(id, map) {
  delete state[map][id];
  changed();
}

async function reply(id, map, path, body, what) {
  state.answeredHere.add(id);
  try {
    await post(path, body);
    delete state.formDrafts[id];
    settled(id, map);
    return true;
  } catch (e) {
    state.answeredHere.delete(id);
    if (e.status === 409 || e.status === 404) {
      const d = e.body?.data || {};
      const r = d.reply;
      const winner = typeof r === 'string' ? r : r?.reply || r?.action || (r?.answers ? 'answered' : '') || d.cause;
      toast(`${what} was already answered in another client${d.client ? ` — ${d.client}` : ''}${winner ? ` (${winner})` : ''}.`, 'info');
      keepLostDraft(id, 'answered', d.client);
      settled(id, map);
      return true;
    }
    throw e;
  }
}

export const replyPermission = (id, replyKind, message, patterns) => {
  const body = { reply: replyKind };
  if (message) body.message = message;
  if (patterns) body.patterns = patterns;
  return reply(id, 'permissions', `/permission/${enc(id)}/reply`, body, 'This permission');
};

export const replyQuestion = (id, answers) => reply(id, 'questions', `/question/${enc(id)}/reply`, { answers }, 'This question');

export const rejectQuestion = (id) => reply(id, 'questions', `/question/${enc(id)}/reject`, {}, 'This question');

export const replyElicitation = (id, action, content) =>
  reply(id, 'elicitations', `/mcp/elicitation/${enc(id)}/reply`, content ? { action, content } : { action }, 'This form');

// ---------- sessions ----------

export async function createSession(title) {
  const s = await post('/session', title ? { title } : {});
  state.sessions[s.id] = s;
  state.messages[s.id] = { byId: {}, loaded: true };
  changed();
  return s;
}

export async function renameSession(id, title) {
  const s = await patch(`/session/${enc(id)}`, { title });
  if (s?.id) state.sessions[s.id] = s;
  changed();
}

export async function forkSession(id) {
  const s = await post(`/session/${enc(id)}/fork`, {});
  if (s?.id) state.sessions[s.id] = s;
  changed();
  return s;
}

export async function deleteSession(id) {
  await del(`/session/${enc(id)}`);
  delete state.sessions[id];
  delete state.messages[id];
  changed();
}

/**
 * Sends text and files (file parts: mentions, attachments) with choice's agent and model ({agent,
 * model}; the composer's defaults without one).
 */
export async function sendPrompt(sessionID, text, choice = state.composer, files = []) {
  const body = { parts: [...(text ? [{ type: 'text', text }] : []), ...files] };
  const c = choice;
  if (c.agent) body.agent = c.agent;
  if (c.model) {
    const i = c.model.indexOf('/');
    body.model = { providerID: c.model.slice(0, i), modelID: c.model.slice(i + 1) };
  }
  delete state.sessionErrors[sessionID];
  await post(`/session/${enc(sessionID)}/prompt_async`, body);
}

export const abortSession = (id) => post(`/session/${enc(id)}/abort`, {});

// ---------- auth ----------

export async function login(username, password) {
  const body = { password };
  if (username) body.username = username;
  await api('POST', '/auth/login', body);
  state.auth = 'ok';
  state.signedOut = false;
  // The page the address names (a #/session/… link) is where the sign-in leads.
  if (location.hash.startsWith('#/login')) navigate('#/');
  state.route = parseRoute();
  if (state.route.expired) state.route = { view: 'sessions' };
  openEvents();
}

export async function logout() {
  try {
    await post('/auth/logout', {});
  } finally {
    closeEvents();
    state.auth = 'login';
    state.signedOut = false;
    changed();
  }
}

// ---------- drafts: what is typed but not sent, kept in this browser per session ----------

const draftKey = (sessionID) => `tandem.draft.${sessionID || 'new'}`;

export function loadDraft(sessionID) {
  try {
    return localStorage.getItem(draftKey(sessionID)) || '';
  } catch {
    return '';
  }
}

export function saveDraft(sessionID, text) {
  try {
    if (text) localStorage.setItem(draftKey(sessionID), text);
    else localStorage.removeItem(draftKey(sessionID));
  } catch {
    /* storage full or disabled: the draft lives as long as the page */
  }
}

/**
 * The first screen's data the server put into the page (signed in only), read once: the element
 * goes, so nothing reads a stale copy later.
 */
function bootData() {
  const el = document.getElementById('tandem-data');
  if (!el) return null;
  el.remove();
  try {
    const snap = JSON.parse(el.textContent);
    return snap && typeof snap === 'object' && Array.isArray(snap['/session']) ? snap : null;
  } catch {
    return null;
  }
}

/**
 * Signs in and goes live. The page may have started both already (index.html): with the server's
 * snapshot the UI shows at once, and the stream's first `server.connected` fetches everything
 * again, so what happened between the snapshot and the stream is not lost.
 */
export async function start() {
  const early = window.__tandemBoot || {};
  window.__tandemBoot = null;
  const snap = bootData();
  if (snap) {
    // The snapshot first: the events kept since are newer and go on top of it.
    const shown = applySnapshot(snap);
    openEvents(early);
    shown.catch(reportError);
    return;
  }
  early.es?.close();
  try {
    await (early.status ? answer(early.status) : get('/session/status'));
    state.auth = 'ok';
    openEvents();
  } catch (e) {
    if (e.status !== 401) {
      state.auth = 'ok';
      state.conn = 'offline';
      scheduleReconnect();
    }
  }
  changed();
}
