// Phone notifications: the service worker (public/sw.js) that makes the UI installable and shows
// tandem's Web Push notifications, the button that subscribes this device, and the deep link a
// notification opens (#/pending/<id> or #/session/<sessionID>?request=<id>): straight to that request's dialog, or, when someone
// answered it first, who did and how.
import { useEffect, useState } from 'preact/hooks';
import { get, post, del, enc } from './api.js';
import { state, changed, navigate, toast, reportError } from './store.js';
import { pushFailure } from './pushmessage.js';
import { fullDate } from './format.js';
import './push.css';

const supported = () => typeof navigator !== 'undefined' && 'serviceWorker' in navigator && typeof PushManager !== 'undefined' && typeof Notification !== 'undefined';

let registration = null;

/** Registers the service worker; the page works the same without one. */
export async function registerServiceWorker() {
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator)) return null;
  try {
    registration = await navigator.serviceWorker.register('/sw.js', { scope: '/' });
    return registration;
  } catch (e) {
    console.warn('service worker not registered:', e);
    return null;
  }
}

function b64ToBytes(s) {
  const pad = '='.repeat((4 - (s.length % 4)) % 4);
  const bin = atob((s + pad).replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

async function currentSubscription() {
  const reg = registration || (await navigator.serviceWorker.ready);
  return { reg, sub: await reg.pushManager.getSubscription() };
}

/** Subscribes this browser to tandem's notifications. */
export async function enablePush() {
  if (!supported()) throw new Error('This browser cannot receive push notifications here (it needs HTTPS, or localhost).');
  const perm = await Notification.requestPermission();
  if (perm !== 'granted') throw new Error('Notifications are blocked for this site: allow them in the browser’s site settings.');
  const { publicKey } = await get('/push/vapid');
  const { reg, sub: existing } = await currentSubscription();
  let sub = existing;
  const key = b64ToBytes(publicKey);
  if (sub && !sameKey(sub.options?.applicationServerKey, key)) {
    await sub.unsubscribe(); // subscribed to another server's key
    sub = null;
  }
  if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  await post('/push/subscription', sub.toJSON());
  return sub;
}

function sameKey(buf, key) {
  if (!buf) return false;
  const a = new Uint8Array(buf);
  return a.length === key.length && a.every((b, i) => b === key[i]);
}

/** Stops notifications to this browser. */
export async function disablePush() {
  const { sub } = await currentSubscription();
  if (!sub) return;
  try {
    await del(`/push/subscription?endpoint=${enc(sub.endpoint)}`);
  } catch (e) {
    if (e.status !== 404) throw e;
  }
  await sub.unsubscribe();
}

/** The header's bell: on, off, or why this device cannot be notified. */
export function PushToggle() {
  // Push needs a secure context: over plain http (not localhost) the bell says so instead.
  const insecure = typeof window !== 'undefined' && window.isSecureContext === false;
  const [mode, setMode] = useState(supported() ? 'unknown' : insecure ? 'insecure' : 'unsupported');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    startPush();
    if (!supported()) return;
    navigator.serviceWorker.ready
      .then((reg) => reg.pushManager.getSubscription())
      .then((sub) => setMode(Notification.permission === 'denied' ? 'denied' : sub ? 'on' : 'off'))
      .catch(() => setMode('off'));
    // Notifications turned on elsewhere in the page (after pairing) light the bell too.
    const on = () => setMode('on');
    window.addEventListener('tandem:push', on);
    return () => window.removeEventListener('tandem:push', on);
  }, []);
  // Whether or not this browser is subscribed: a refusal means some device is not ringing.
  const refusal = useRefusal();
  if (mode === 'unsupported' || mode === 'unknown') return refusal ? <PushRefusal delivery={refusal} /> : null;
  const title = {
    on: 'Notifications on for this device: tap to turn off',
    off: 'Notify this device when something waits for you',
    denied: 'Notifications are blocked for this site in the browser settings',
    insecure: 'Phone notifications need tandem on https:// (see the README: Phone notifications)',
  }[mode];
  const toggle = async () => {
    if (busy) return;
    setBusy(true);
    try {
      if (mode === 'on') {
        await disablePush();
        setMode('off');
        toast('This device gets no more notifications.');
      } else {
        await enablePush();
        setMode('on');
        toast('This device will be notified when something waits for you.');
      }
    } catch (e) {
      if (typeof Notification !== 'undefined' && Notification.permission === 'denied') setMode('denied');
      reportError(pushFailure(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      {refusal && <PushRefusal delivery={refusal} />}
      <button class={'ghost push-toggle ' + mode + (refusal ? ' refused' : '')} onClick={toggle} disabled={busy || mode === 'denied' || mode === 'insecure'} title={title} aria-label={title} aria-pressed={mode === 'on'} data-testid="push-toggle" data-state={mode}>
      <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
        <path d="M12 3a6 6 0 0 0-6 6v4l-2 3h16l-2-3V9a6 6 0 0 0-6-6zm-2 15a2 2 0 0 0 4 0" fill="none" stroke="currentColor" stroke-width="2" stroke-linejoin="round" />
        {mode !== 'on' && <path d="M4 4l16 16" stroke="currentColor" stroke-width="2" />}
      </svg>
    </button>
    </>
  );
}

/**
 * The newest Web Push delivery when a push service refused it (GET /notify/delivery): a refusal is
 * otherwise silent, since the phone simply never rings. Looked up when the page opens and shortly
 * after each new request, which is when a push is attempted.
 */
function useRefusal() {
  const [refusal, setRefusal] = useState(null);
  const asked = Object.keys(state.permissions).length + Object.keys(state.questions).length + Object.keys(state.elicitations).length;
  useEffect(() => {
    let live = true;
    const look = () =>
      get('/notify/delivery?limit=50')
        .then((log) => {
          const last = (log || []).find((d) => d.sink === 'webpush' && d.status !== 'skipped');
          if (live) setRefusal(last && (last.status === 'failed' || last.status === 'retrying') ? last : null);
        })
        .catch(() => {});
    look();
    const timers = [1500, 5000].map((ms) => setTimeout(look, ms));
    return () => {
      live = false;
      timers.forEach(clearTimeout);
    };
  }, [asked]);
  return refusal;
}

const dismissedRefusals = new Set();

/** Says that the push service refused tandem's notification, with its status and reason. */
function PushRefusal({ delivery }) {
  const [, redraw] = useState(0);
  if (dismissedRefusals.has(delivery.id)) return null;
  const reason = delivery.detail || '';
  return (
    <div class="push-refusal" role="alert" data-testid="push-refusal" data-code={delivery.code || ''}>
      <span>
        <strong>Notifications are not reaching your devices.</strong> The push service refused the last one
        {delivery.code ? ` (HTTP ${delivery.code})` : ''}: {reason}
        {/BadJwtToken/i.test(reason) && ' — set a real contact as the webpush "subject" in the notify config (see Phone notifications in the docs).'}
      </span>
      <button
        class="ghost"
        aria-label="Dismiss"
        onClick={() => {
          dismissedRefusals.add(delivery.id);
          redraw((n) => n + 1);
        }}
      >
        ✕
      </button>
    </div>
  );
}

// ---------- deep link: #/pending/<id> ----------

const kinds = [
  { prefix: 'per_', map: 'permissions', list: '/permission' },
  { prefix: 'que_', map: 'questions', list: '/question' },
  { prefix: 'eli_', map: 'elicitations', list: '/mcp/elicitation' },
];

// A notification links to #/pending/<id>, or to the request's session with the request named
// (#/session/<sessionID>?request=<id>, the link webhooks and ntfy carry).
function pendingTarget() {
  const h = typeof location !== 'undefined' ? location.hash : '';
  const m = h.match(/^#\/pending\/([A-Za-z0-9_]+)$/) || h.match(/^#\/session\/[A-Za-z0-9_]+\?(?:.*&)?request=([A-Za-z0-9_]+)/);
  return m ? m[1] : null;
}

function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return fullDate(ms);
}

/** Who answered a request that is no longer pending, from the decision log. */
export async function answeredBy(id) {
  if (!id.startsWith('per_')) return null;
  const log = await get('/permission/history?limit=1000');
  return (log || []).find((d) => d.requestID === id) || null;
}

export function describeDecision(d) {
  const by = d.cause === 'reply' ? d.client || 'a client' : { timeout: 'nobody in time', cancel: 'cancelled', grant: 'a remembered rule' }[d.cause] || d.cause;
  return `${d.reply}${d.cause === 'reply' ? ' by ' + by : ' (' + by + ')'}, ${ago(d.time.decided)}`;
}

/** Opens the request a notification names, in its dialog, then leaves a normal route behind. */
async function openPending(id) {
  const kind = kinds.find((k) => id.startsWith(k.prefix));
  if (!kind) return navigate('#/');
  try {
    const items = await get(kind.list);
    const item = (items || []).find((x) => x.id === id);
    if (item) {
      state[kind.map][id] = item;
      state.pendingCurrent = id;
      state.pendingOpen = true;
      changed();
      return navigate(item.sessionID ? `#/session/${item.sessionID}` : '#/');
    }
    const d = await answeredBy(id).catch(() => null);
    toast(d ? `Already answered: ${describeDecision(d)}.` : 'This request is no longer waiting.', 'info', 10000);
    navigate(d?.sessionID ? `#/session/${d.sessionID}` : '#/');
  } catch (e) {
    if (e.status !== 401) reportError(e); // signed out: the login form shows, the link stays
  }
}

let started = false;

function followDeepLink() {
  const id = pendingTarget();
  if (id && state.auth === 'ok') openPending(id);
}

/** Starts the service worker and the deep-link handling; runs whenever the signed-in UI mounts. */
export function startPush() {
  if (!started) {
    started = true;
    registerServiceWorker();
    window.addEventListener('hashchange', followDeepLink);
  }
  followDeepLink();
}

