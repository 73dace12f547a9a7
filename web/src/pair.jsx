// Pairing a device (a phone): the "Pair a device" button shows a one-time link and its QR code
// (POST /auth/pair, the same link `tandem pair` prints); the page that link opens (/pair#CODE)
// trades the code in its fragment for the session cookie (POST /auth/pair/redeem) and lands on the
// inbox, offering notifications. The code is never in a query string: a fragment is not sent to
// the server, and it leaves the address bar before anything else happens.
import { useEffect, useRef, useState } from 'preact/hooks';
import { post } from './api.js';
import { toast, reportError } from './store.js';
import { enablePush } from './push.jsx';
import './pair.css';

const pairedFlag = 'tandem-paired';

async function redeem(code) {
  if (!code) throw new Error('This pairing link has no code. Make a new one with tandem pair, or Pair a device in the UI.');
  const res = await fetch('/auth/pair/redeem', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ code }),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  if (res.ok) return;
  const body = await res.json().catch(() => ({}));
  const err = new Error(body?.data?.message || `The server answered ${res.status}.`);
  err.name = body?.name || 'Error';
  throw err;
}

const refusals = {
  PairingUsedError: 'This link was already used',
  PairingExpiredError: 'This link has expired',
};

/** The page a pairing link opens. */
export function PairLanding() {
  const [error, setError] = useState(null);
  useEffect(() => {
    const code = decodeURIComponent(location.hash.slice(1));
    history.replaceState(null, '', '/pair');
    redeem(code).then(
      () => {
        sessionStorage.setItem(pairedFlag, '1');
        location.replace('/#/');
      },
      (e) => setError(e),
    );
  }, []);
  return (
    <div class="login">
      <div class="card pair-landing" data-testid="pair-landing" role={error ? 'alert' : 'status'}>
        <div class="brand big">
          <span class="logo" aria-hidden="true" /> tandem
        </div>
        {!error && <p>Signing this device in…</p>}
        {error && (
          <>
            <h1 class="pair-refused" data-testid="pair-refused" data-reason={error.name}>
              {refusals[error.name] || 'This link cannot sign you in'}
            </h1>
            <p>{error.message}</p>
            <p class="muted">A pairing link signs in one device, once, for a few minutes.</p>
            <a class="button primary" href="/">
              Sign in with the password
            </a>
          </>
        )}
      </div>
    </div>
  );
}

/** After a pairing link signed this device in: offers notifications, once. */
export function PairedNotice() {
  const [shown, setShown] = useState(() => sessionStorage.getItem(pairedFlag) === '1');
  const [busy, setBusy] = useState(false);
  if (!shown) return null;
  const done = () => {
    sessionStorage.removeItem(pairedFlag);
    setShown(false);
  };
  const enable = async () => {
    setBusy(true);
    try {
      await enablePush();
      window.dispatchEvent(new Event('tandem:push'));
      toast('This device will be notified when something waits for you.');
      done();
    } catch (e) {
      reportError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="paired-notice" role="status" data-testid="paired-notice">
      <span>
        <strong>This device is signed in.</strong> Get a notification, with Approve and Reject, when something waits for you.
      </span>
      <span class="actions">
        <button class="primary" onClick={enable} disabled={busy} data-testid="paired-enable-push">
          Turn on notifications
        </button>
        <button onClick={done}>Not now</button>
      </span>
    </div>
  );
}

function loopback(origin) {
  const host = new URL(origin).hostname;
  return host === 'localhost' || host.endsWith('.localhost') || /^127\./.test(host) || host === '[::1]';
}

function remaining(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** The header's "Pair a device": a dialog with a one-time link and its QR code. */
export function PairButton() {
  const [pairing, setPairing] = useState(null);
  const [open, setOpen] = useState(false);
  const [now, setNow] = useState(Date.now());
  const closeRef = useRef(null);
  const backRef = useRef(null);
  const make = async () => {
    try {
      setPairing(await post('/auth/pair', { url: location.origin }));
      setNow(Date.now());
    } catch (e) {
      reportError(e);
      setOpen(false);
    }
  };
  useEffect(() => {
    if (!open) return undefined;
    closeRef.current?.focus();
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [open]);
  const show = () => {
    backRef.current = document.activeElement;
    setPairing(null);
    setOpen(true);
    make();
  };
  const close = () => {
    setOpen(false);
    setPairing(null);
    backRef.current?.focus?.();
  };
  const expired = pairing && now >= pairing.expires;
  return (
    <>
      <button class="ghost pair-button" onClick={show} title="Pair a device" aria-label="Pair a device" data-testid="pair-device">
        <svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true">
          <rect x="4" y="1.5" width="8" height="13" rx="1.5" fill="none" stroke="currentColor" stroke-width="1.5" />
          <path d="M7 12h2" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" />
        </svg>
      </button>
      {open && (
        <div class="modal-backdrop" onClick={(e) => e.target === e.currentTarget && close()}>
          <div
            class="modal card pair-dialog"
            role="dialog"
            aria-modal="true"
            aria-labelledby="pair-title"
            data-testid="pair-dialog"
            onKeyDown={(e) => {
              e.stopPropagation();
              if (e.key === 'Escape') close();
            }}
          >
            <h3 id="pair-title">Pair a device</h3>
            <p>Scan the code with the phone’s camera. The link signs one device in, once.</p>
            {!pairing && <p class="muted">Making a link…</p>}
            {pairing && (
              <>
                <img class={'pair-qr' + (expired ? ' expired' : '')} alt="QR code of the pairing link" src={'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(pairing.svg)} data-testid="pair-qr" />
                <input class="pair-link mono" readOnly value={pairing.url} aria-label="Pairing link" onFocus={(e) => e.currentTarget.select()} data-testid="pair-link" />
                <p class={expired ? 'error-box' : 'muted'} role="status">
                  {expired ? 'This link has expired.' : `Works for ${remaining(pairing.expires - now)} more.`}
                </p>
                {loopback(location.origin) && (
                  <p class="notice">
                    This address is this computer’s own: a phone cannot reach it. Serve tandem on your network (<code>tandem web --hostname 0.0.0.0</code> with a password) or behind
                    HTTPS, and open the UI at that address.
                  </p>
                )}
              </>
            )}
            <div class="actions">
              <button onClick={make} data-testid="pair-new">
                New link
              </button>
              <button ref={closeRef} class="primary" onClick={close}>
                Close
              </button>
            </div>
          </div>
        </div>
      )}
    </>
  );
}
