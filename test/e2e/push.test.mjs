// Phone notifications in Chromium: a request that waits is pushed by tandem, encrypted (RFC 8291)
// and signed (VAPID), to a push service on loopback, which decrypts it and delivers it to the
// page's registered service worker through the DevTools protocol (ServiceWorker.deliverPushMessage),
// as a real push service delivers to the browser. The service worker shows the notification;
// its Approve action answers the request with the notification's single-use token.
//
// What is not the real thing, and why: headless Chromium has no push service, so
// PushManager.subscribe fails there and the subscription is made by the loopback service with
// keys it generates (POSTed to /push/subscription as the bell would post the browser's); and
// headless Chromium has no notification UI to tap, so the tap is the service worker's own
// notificationclick handler (onNotificationClick) run on the notification it displayed.
//
// What the service worker displayed is read from its own showNotification calls, recorded once
// each has resolved (the notification is up), rather than by polling getNotifications: Chromium
// reconciles its notification store with what is on screen when getNotifications runs, and a poll
// landing while a notification is being displayed dropped it from the store in two CI runs (the
// push had arrived, the notification was shown, getNotifications answered [] from then on).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, startTandem, launchBrowser, loggedInPage, rest, until, shot } from './harness.mjs';
import { startPushService } from './pushservice.mjs';

const why = missing();
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

describe('phone notifications (Web Push)', { skip: why || false }, () => {
  let browser, server, page, cdp, push, sw;
  const delivered = [];

  before(async () => {
    browser = await launchBrowser();
    server = await startTandem();
    page = await loggedInPage(browser, server, phone);
    const ctx = page.context();
    await ctx.grantPermissions(['notifications'], { origin: server.base });
    cdp = await ctx.newCDPSession(page);
    const registrations = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
    await cdp.send('ServiceWorker.enable');
    // The UI registers its service worker, which takes control of the page.
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
    await until(() => page.evaluate(() => !!navigator.serviceWorker.controller), 'the service worker to control the page');
    const reg = await until(() => registrations.find((r) => r.scopeURL === server.base + '/' && !r.isDeleted), 'the registration');
    sw = await until(() => ctx.serviceWorkers().find((w) => w.url() === server.base + '/sw.js'), 'the service worker');
    await sw.evaluate(() => {
      self.shownForTest = [];
      const show = self.registration.showNotification.bind(self.registration);
      self.registration.showNotification = (title, options = {}) =>
        show(title, options).then((r) => {
          self.shownForTest.push({ title, body: options.body || '', tag: options.tag, actions: (options.actions || []).map((a) => a.action + ':' + a.title) });
          return r;
        });
    });
    push = await startPushService(async (data) => {
      delivered.push(JSON.parse(data));
      await cdp.send('ServiceWorker.deliverPushMessage', { origin: server.base + '/', registrationId: reg.registrationId, data });
    });
    const { data: key } = await rest(server, 'GET', '/push/vapid');
    const sub = await rest(server, 'POST', '/push/subscription', push.subscribe(key.publicKey));
    assert.equal(sub.status, 200, JSON.stringify(sub.data));
  });

  after(async () => {
    await push?.close();
    await browser?.close();
    await server?.stop();
  });

  /** The notifications the service worker has displayed for tag, oldest first. */
  const shown = (tag) => sw.evaluate((tag) => self.shownForTest.filter((n) => n.tag === tag), tag);

  async function ask(text) {
    const { data: s } = await rest(server, 'POST', '/session', {});
    const r = await rest(server, 'POST', `/session/${s.id}/prompt_async`, { parts: [{ type: 'text', text }] });
    assert.equal(r.status, 204);
    const [req] = await until(async () => {
      const { data } = await rest(server, 'GET', `/permission?sessionID=${s.id}`);
      return data.length ? data : null;
    }, 'the request to wait');
    return { sid: s.id, req, tag: 'tandem-' + req.id };
  }

  test('the bell is there to subscribe this device', async () => {
    await page.locator('[data-testid="push-toggle"]').waitFor();
    assert.equal(await page.locator('[data-testid="push-toggle"]').getAttribute('data-state'), 'off');
  });

  test('a pushed request shows a notification naming the tool and command, and Approve resolves it', async () => {
    const { sid, req, tag } = await ask('run: echo approved-in-chromium');
    const [note] = await until(async () => {
      const list = await shown(tag);
      return list.length && list[0].actions.length ? list : null;
    }, 'the notification');
    assert.match(note.title, /bash/);
    assert.match(note.body, /echo approved-in-chromium/);
    assert.deepEqual(note.actions, ['approve:Approve', 'reject:Reject']);
    assert.equal(delivered[0].type, 'asked');
    assert.equal(delivered[0].requestID, req.id);

    // The tap on Approve: the service worker's notificationclick handler on the shown notification.
    await sw.evaluate(async (tag) => {
      const [n] = await self.registration.getNotifications({ tag });
      await onNotificationClick(n, 'approve');
    }, tag);

    const [decision] = await until(async () => {
      const { data } = await rest(server, 'GET', `/permission/history?sessionID=${sid}`);
      return data.length ? data : null;
    }, 'the decision');
    assert.equal(decision.requestID, req.id);
    assert.equal(decision.reply, 'once');
    assert.equal(decision.client, 'web push action');
    await until(async () => {
      const { data } = await rest(server, 'GET', `/session/${sid}/message`);
      return JSON.stringify(data).includes('approved-in-chromium\\n');
    }, 'the command to run');
    // The server's resolved push replaces the notification (same tag) and says who answered.
    let seen;
    const done = await until(
      async () => {
        seen = await shown(tag);
        return seen.find((n) => /by web push action/.test(n.title));
      },
      'the notification to say who answered',
      30000,
    ).catch(async (e) => {
      const { data: log } = await rest(server, 'GET', `/notify/delivery?requestID=${req.id}`);
      const pushed = delivered.map((d) => `${d.type}: ${d.title}`);
      throw new Error(`${e.message}\nshown: ${JSON.stringify(seen)}\npushed: ${JSON.stringify(pushed)}\npush service errors: ${push.errors.join('; ')}\ndelivery log: ${JSON.stringify(log)}`);
    });
    assert.deepEqual(done.actions, []);
    // The open UI learnt it too, and who it was.
    await page.locator('[data-testid="toast"]', { hasText: 'web push action' }).first().waitFor();
    assert.deepEqual(push.errors, []);

    // Opening the answered request's link says who answered first.
    await page.evaluate((id) => (location.hash = '#/pending/' + id), req.id);
    await page.locator('[data-testid="toast"]', { hasText: /Already answered: once by web push action/ }).first().waitFor();
  });

  test('tapping the notification opens the request’s dialog, and one tap answers it', async () => {
    await page.evaluate(() => (location.hash = '#/mcp'));
    await page.keyboard.press('Escape');
    const { sid, req, tag } = await ask('run: echo opened-from-notification');
    await until(async () => (await shown(tag)).length > 0, 'the notification');
    await page.keyboard.press('Escape'); // the dialog the event opened is hidden again
    await page.locator('[data-testid="pending-dialog"]').waitFor({ state: 'detached' });

    await sw.evaluate(async (tag) => {
      const [n] = await self.registration.getNotifications({ tag });
      await onNotificationClick(n, '');
    }, tag);

    const dialog = page.locator(`[data-testid="pending-dialog"][data-id="${req.id}"]`);
    await dialog.waitFor();
    await page.waitForURL(new RegExp(`#/session/${sid}$`));
    await shot(page, 'phone-approval');
    await dialog.locator('[data-testid="approve-once"]').tap();
    await dialog.waitFor({ state: 'detached' });
    const { data } = await rest(server, 'GET', `/permission/history?sessionID=${sid}`);
    assert.equal(data[0].reply, 'once');
    assert.notEqual(data[0].client, 'web push action');
    assert.deepEqual(page.errors, []);
  });

  test('pushes are signed with a contact every push service accepts, Apple’s too', async () => {
    assert.ok(push.received.length > 0, 'pushes went out');
    for (const r of push.received) {
      const jwt = /t=([^,\s]+)/.exec(r.headers.authorization)[1];
      const claims = JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url'));
      assert.equal(claims.sub, 'https://github.com/tandem-dev/tandem');
    }
    assert.deepEqual(push.errors, []);
  });

  test('a push service’s refusal is shown in the UI and in the delivery log, with its status and reason', async () => {
    push.refuse(403, 'BadJwtToken');
    try {
      const { req } = await ask('run: echo refused-by-the-push-service');
      const [entry] = await until(async () => {
        const { data } = await rest(server, 'GET', `/notify/delivery?requestID=${req.id}`);
        return data.filter((d) => d.sink === 'webpush' && d.status === 'failed');
      }, 'the failed delivery in the log');
      assert.equal(entry.code, 403);
      assert.match(entry.detail, /BadJwtToken/);
      const banner = page.getByTestId('push-refusal');
      await banner.waitFor();
      assert.equal(await banner.getAttribute('data-code'), '403');
      assert.match(await banner.innerText(), /refused.*HTTP 403.*BadJwtToken/s);
      await shot(page, 'push-refused');
      await page.keyboard.press('Escape');
    } finally {
      push.refuse(null);
    }
  });
});
