// A Web Push service on loopback for the browser tests: it hands out subscriptions with real,
// freshly generated browser keys (P-256 ECDH and a 16-byte auth secret), checks each push's VAPID
// signature (RFC 8292) against the key the subscription was made with, decrypts the aes128gcm
// body (RFC 8291, RFC 8188) with the browser's private key, and hands the plaintext on — in the
// tests, to the page's service worker through the DevTools protocol, as a real push service
// would hand it to the browser. Like Apple's, it refuses a VAPID subject that names no reachable
// contact (localhost, a private name) with 403 {"reason":"BadJwtToken"}.
import crypto from 'node:crypto';
import http from 'node:http';

const b64u = (buf) => Buffer.from(buf).toString('base64url');

/** Opens an aes128gcm body with the browser's ECDH key and auth secret. */
export function decrypt(ecdh, auth, body) {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20];
  const asPublic = body.subarray(21, 21 + idlen);
  const ct = body.subarray(21 + idlen);
  if (rs < 18 || ct.length > rs) throw new Error(`record size ${rs} for ${ct.length} bytes`);
  const shared = ecdh.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), ecdh.getPublicKey(), asPublic]);
  const ikm = Buffer.from(crypto.hkdfSync('sha256', shared, auth, keyInfo, 32));
  const cek = Buffer.from(crypto.hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(crypto.hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const d = crypto.createDecipheriv('aes-128-gcm', cek, nonce);
  d.setAuthTag(ct.subarray(ct.length - 16));
  let rec = Buffer.concat([d.update(ct.subarray(0, ct.length - 16)), d.final()]);
  let end = rec.length;
  while (end > 0 && rec[end - 1] === 0) end--;
  if (end === 0 || rec[end - 1] !== 2) throw new Error('no last-record delimiter');
  return rec.subarray(0, end - 1);
}

/** Checks `vapid t=<jwt>, k=<key>` for endpoint and returns k. */
export function verifyVapid(header, endpoint) {
  const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header || '');
  if (!m) throw new Error(`not a vapid Authorization: ${header}`);
  const [h, c, s] = m[1].split('.');
  const k = Buffer.from(m[2], 'base64url');
  const key = crypto.createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: b64u(k.subarray(1, 33)), y: b64u(k.subarray(33, 65)) },
    format: 'jwk',
  });
  if (!crypto.verify('sha256', Buffer.from(`${h}.${c}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'))) {
    throw new Error('VAPID signature does not verify');
  }
  const claims = JSON.parse(Buffer.from(c, 'base64url'));
  if (claims.aud !== new URL(endpoint).origin) throw new Error(`aud ${claims.aud}`);
  if (!(claims.exp * 1000 > Date.now() && claims.exp * 1000 < Date.now() + 24 * 3600e3)) throw new Error(`exp ${claims.exp}`);
  if (localSubject(claims.sub)) throw Object.assign(new Error(`subject ${claims.sub} names no reachable contact`), { status: 403, reason: 'BadJwtToken' });
  return m[2];
}

/** Whether a VAPID subject names this machine or a private name, as Apple's push service refuses. */
export function localSubject(sub) {
  let host = '';
  if (typeof sub !== 'string') return true;
  if (sub.startsWith('mailto:')) host = sub.slice(7).split('@')[1]?.split('?')[0] || '';
  else if (sub.startsWith('https://')) host = new URL(sub).hostname;
  else return true;
  host = host.toLowerCase().replace(/\.$/, '');
  if (!host.includes('.') || /^(127\.|10\.|192\.168\.|\[)/.test(host)) return true;
  return /\.(localhost|local|internal|invalid|test|example|lan)$/.test(host);
}

/**
 * Starts the service. deliver(plaintext, endpoint) is called with every accepted push; refused
 * pushes are collected in `errors`.
 */
export async function startPushService(deliver) {
  const subs = new Map();
  const errors = [];
  let refusal = null;
  const received = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const sub = subs.get(req.url);
      const endpoint = base + req.url;
      try {
        if (!sub) throw Object.assign(new Error('no such subscription'), { status: 404 });
        if (refusal) throw Object.assign(new Error('refused as asked'), refusal);
        if (req.headers['content-encoding'] !== 'aes128gcm') throw new Error(`Content-Encoding ${req.headers['content-encoding']}`);
        if (!req.headers.ttl) throw new Error('no TTL');
        const k = verifyVapid(req.headers.authorization, endpoint);
        if (k !== sub.serverKey) throw new Error(`signed by ${k}, subscribed with ${sub.serverKey}`);
        const plain = decrypt(sub.ecdh, sub.auth, Buffer.concat(chunks)).toString('utf8');
        received.push({ endpoint, plain, headers: req.headers });
        await deliver(plain, endpoint);
        res.writeHead(201).end();
      } catch (e) {
        if (!e.asked) errors.push(e);
        if (e.reason) res.writeHead(e.status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ reason: e.reason }));
        else res.writeHead(e.status || 400).end(String(e.message));
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    errors,
    received,
    /** PushManager.subscribe's result for a browser subscribing with serverKey. */
    subscribe(serverKey) {
      const ecdh = crypto.createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = crypto.randomBytes(16);
      const path = '/push/' + b64u(crypto.randomBytes(9));
      subs.set(path, { ecdh, auth, serverKey });
      return { endpoint: base + path, keys: { p256dh: b64u(ecdh.getPublicKey()), auth: b64u(auth) } };
    },
    /** Refuses every push from now on as status with reason (Apple's JSON body); null accepts again. */
    refuse(status, reason) {
      refusal = status ? { status, reason, asked: true } : null;
    },
    close: () => new Promise((r) => server.close(r)),
  };
}
