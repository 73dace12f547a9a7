// What the bell says when the browser refuses to subscribe: a sentence about what happened and what
// to do, not the browser's "Registration failed - permission denied".

/** The error to show for e, thrown while turning notifications on. */
export function pushFailure(e) {
  const name = e?.name || '';
  const message = String(e?.message || '');
  if (name === 'NotAllowedError' || /permission denied/i.test(message)) {
    return new Error(
      'This browser refused to sign up for notifications. Notifications are allowed for this site, but the browser’s push service turned the request down: this happens in private windows, in browsers without a push service (such as some Chromium builds), and when the system blocks notifications for the browser.',
    );
  }
  if (name === 'AbortError' || /push service/i.test(message)) {
    return new Error('The browser could not reach its push service, so this device cannot be notified yet. Check the connection and try again.');
  }
  return e;
}
