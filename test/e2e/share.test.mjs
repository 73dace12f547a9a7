// A read-only link (POST /session/{id}/share) opened in Chromium by someone with no credentials:
// the conversation shows, nothing can be changed, the rest of tandem stays closed, and revoking
// the link closes it at once.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, shot, rest, until } from './harness.mjs';

const why = missing();

describe('a shared session', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('opens read-only for a stranger and closes when revoked', async () => {
    const { data: session } = await rest(server, 'POST', '/session', {});
    const sent = await rest(server, 'POST', `/session/${session.id}/message`, { parts: [{ type: 'text', text: 'hello from the owner' }] });
    assert.equal(sent.status, 200);
    const shared = await rest(server, 'POST', `/session/${session.id}/share`);
    assert.equal(shared.status, 200);
    const link = shared.data.share.url;
    assert.match(link, new RegExp(`^${server.base}/s/[A-Za-z0-9_-]{43}$`));
    assert.equal((await rest(server, 'POST', `/session/${session.id}/share`)).data.share.url, link, 'sharing again returns the same link');

    // A stranger: a fresh browser context with no cookie and no password.
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15000);
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e));
    await page.goto(link);
    await page.waitForSelector('[data-testid="msg-assistant"]');
    assert.equal(await page.textContent('[data-testid="session-title"]'), 'Hello from the owner'); // the demo model's title
    assert.match(await page.textContent('[data-testid="conversation"]'), /You said: hello from the owner/);
    assert.equal(await page.locator('[data-testid="composer-input"]').count(), 0, 'a read-only page has no composer');
    assert.equal(await page.locator('text=Delete').count(), 0, 'a read-only page offers no delete');
    await shot(page, 'share-read-only');
    // The link opens this session only: the rest of the API still wants credentials.
    const api = await page.evaluate(async () => (await fetch('/session', { credentials: 'omit' })).status);
    assert.equal(api, 401);
    assert.deepEqual(errors, []);

    const revoked = await rest(server, 'DELETE', `/session/${session.id}/share`);
    assert.equal(revoked.status, 200);
    assert.equal(revoked.data.share, undefined);
    await until(async () => (await page.locator('[data-testid="share-error"]').count()) > 0, 'the open page to learn the link was revoked');
    assert.match(await page.textContent('[data-testid="share-error"]'), /does not exist or was revoked/);
    await context.close();
  });
});
