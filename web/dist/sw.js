// tandem's service worker: it shows the notifications tandem pushes (a request waiting for a
// person, and later how it ended) and answers their Approve / Reject buttons. A button posts the
// single-use token tandem put in that notification for that request and that decision to
// /push/action on this origin, without cookies or the password: the token is the only credential.
// Tapping the notification itself opens the request's dialog in the web UI.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

// A page opened while tandem cannot be reached (the server is down, the phone has no network) gets
// a page that says so, instead of the browser's own error. Only navigations are handled; nothing
// is cached, so the UI is always the server's current one.
self.addEventListener('fetch', (event) => {
  if (event.request.mode !== 'navigate') return;
  event.respondWith(fetch(event.request).catch(() => offlinePage()));
});

function offlinePage() {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>tandem is not reachable</title>
<style>
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;font:15px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;background:#fff;color:#1f2328}
@media (prefers-color-scheme:dark){body{background:#0d1117;color:#d6dde6}a{color:#58a6ff}}
main{max-width:420px;padding:24px}h1{font-size:20px;margin:0 0 8px}a{color:#2563eb;font-weight:600}
</style></head>
<body><main data-testid="offline-page"><h1>tandem is not reachable</h1>
<p>The tandem server did not answer: it may be stopped, or this device is offline. Nothing is lost: the sessions are on the server, and what you typed is kept in this browser.</p>
<p><a href="">Try again</a></p></main></body></html>`;
  return new Response(html, { status: 503, headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' } });
}

self.addEventListener('push', (event) => {
  let msg = null;
  try {
    msg = event.data ? event.data.json() : null;
  } catch {
    msg = null;
  }
  if (!msg || typeof msg !== 'object') {
    msg = { type: 'asked', title: 'tandem', body: event.data ? event.data.text() : 'Something is waiting for you.', url: '/' };
  }
  event.waitUntil(show(msg));
});

function tagOf(requestID) {
  return requestID ? 'tandem-' + requestID : 'tandem';
}

/** Shows a pushed message; a request's later messages replace its notification (same tag). */
function show(msg) {
  const asked = msg.type === 'asked';
  const options = {
    body: msg.body || '',
    tag: tagOf(msg.requestID),
    icon: '/icons/icon-192.png',
    badge: '/icons/icon-192.png',
    renotify: asked,
    requireInteraction: asked,
    silent: !asked,
    timestamp: Date.now(),
    data: { type: msg.type, requestID: msg.requestID || null, url: msg.url || '/', tokens: {}, labels: {}, expires: msg.expires || 0 },
  };
  if (asked && Array.isArray(msg.actions) && msg.actions.length) {
    options.actions = msg.actions.map((a) => ({ action: a.action, title: a.title }));
    for (const a of msg.actions) {
      options.data.tokens[a.action] = a.token;
      options.data.labels[a.action] = a.title;
    }
  }
  return self.registration.showNotification(msg.title || 'tandem', options);
}

self.addEventListener('notificationclick', (event) => event.waitUntil(onNotificationClick(event.notification, event.action)));

/** A tap on a notification: a button answers with its token; the body opens the request's dialog. */
function onNotificationClick(n, action) {
  const data = n.data || {};
  const token = action ? data.tokens?.[action] : null;
  n.close();
  return token ? answer(data, action, token, n.title) : openApp(data.url);
}

/** Answers the request with a button's token; says so in the notification's place only when that failed. */
async function answer(data, action, token, title) {
  let res;
  let body = {};
  try {
    res = await fetch('/push/action', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token }),
      credentials: 'omit',
      cache: 'no-store',
    });
    body = await res.json().catch(() => ({}));
  } catch (e) {
    return note(data, 'tandem could not be reached', `${title}\nTap to open tandem and answer there.`);
  }
  // Answered: tandem pushes the outcome, which takes this notification's place on every device.
  if (res.ok) return undefined;
  const d = body?.data || {};
  if (res.status === 409) {
    const r = d.reply;
    const what = typeof r === 'string' ? r : r?.decision || r?.reply || d.cause || 'answered';
    return note(data, `Already answered (${what})${d.client ? ' by ' + d.client : ''}`, title);
  }
  // Expired, used, or the request is gone: the web UI shows where it stands.
  return openApp(data.url);
}

function note(data, title, body) {
  return self.registration.showNotification(title, {
    body: body || '',
    tag: tagOf(data.requestID),
    icon: '/icons/icon-192.png',
    badge: '/icons/icon-192.png',
    silent: true,
    data: { type: 'note', requestID: data.requestID, url: data.url || '/', tokens: {}, labels: {} },
  });
}

/** Shows url in an open tandem window (brought to the front when the browser allows), or opens one. */
async function openApp(url) {
  const target = new URL(url || '/', self.location.origin).href;
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const w of windows) {
    if (new URL(w.url).origin !== self.location.origin) continue;
    try {
      const shown = (await w.navigate(target)) || w;
      await shown.focus().catch(() => {});
      return shown;
    } catch {
      /* not ours to navigate: try the next window, or open one */
    }
  }
  return self.clients.openWindow(target);
}

// The push service renewed the subscription: tell tandem the new one (the browser's session
// cookie goes with it when it is still valid; otherwise the next visit subscribes again).
self.addEventListener('pushsubscriptionchange', (event) => {
  event.waitUntil(
    (async () => {
      const old = event.oldSubscription;
      const sub =
        event.newSubscription ||
        (old && (await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: old.options.applicationServerKey })));
      if (!sub) return;
      await fetch('/push/subscription', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(sub.toJSON()),
        credentials: 'same-origin',
      });
    })().catch(() => {}),
  );
});
