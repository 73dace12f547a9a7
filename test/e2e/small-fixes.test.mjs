// Issue 30's smaller items: "+ New" and Ctrl+Alt+N leave the focus in the composer; on a phone the
// session header is one row and Send is a thumb's size; who answered is a readable name; a missing
// session is one notice; a rule for an unknown permission is refused; the bell speaks in sentences.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, rest, until, password, clickNewSession } from './harness.mjs';

const why = missing();
const phone = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const focused = (page) => page.evaluate(() => document.activeElement?.dataset?.testid || document.activeElement?.tagName);

describe('smaller fixes of issue 30', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('“+ New” and Ctrl+Alt+N open a new session with the focus in its composer', async () => {
    const page = await loggedInPage(browser, server);
    await clickNewSession(page);
    await page.waitForURL(/#\/session\//);
    await until(async () => (await focused(page)) === 'composer-input', 'the focus in the composer after + New');
    const first = page.url();
    await page.keyboard.type('typed at once');
    assert.equal(await page.locator('[data-testid="composer-input"]').inputValue(), 'typed at once');

    await page.locator('[data-testid="conversation"]').click();
    await page.keyboard.press('Control+Alt+KeyN');
    await until(async () => page.url() !== first && /#\/session\//.test(page.url()), 'another new session');
    await until(async () => (await focused(page)) === 'composer-input', 'the focus in the composer after Ctrl+Alt+N');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('on a 390×844 phone the session header is one row, its other actions behind ⋯, and Send is at least 44 px tall', async () => {
    const page = await loggedInPage(browser, server, phone);
    await clickNewSession(page);
    await page.fill('[data-testid="composer-input"]', 'hello phone');
    await page.click('[data-testid="send"]');
    await page.waitForSelector('[data-testid="msg-assistant"]');
    const head = await page.locator('.session-head').evaluate((el) => {
      const kids = [...el.children].filter((c) => c.getBoundingClientRect().width > 0);
      const boxes = kids.map((c) => c.getBoundingClientRect());
      return { height: el.getBoundingClientRect().height, tops: boxes.map((b) => Math.round(b.top + b.height / 2)), right: Math.max(...boxes.map((b) => b.right)) };
    });
    assert.ok(head.height <= 56, `the header is ${head.height}px tall`);
    assert.ok(Math.max(...head.tops) - Math.min(...head.tops) <= 4, `the header's items are on several rows: ${head.tops}`);
    assert.ok(head.right <= 390, `the header sticks out: ${head.right}`);
    assert.ok(await page.locator('[data-testid="rename"]').isVisible(), 'Rename stays in the header');
    assert.equal(await page.locator('[data-testid="undo"]').isVisible(), false, 'Undo is folded away');
    await page.click('[data-testid="head-more"]');
    assert.ok(await page.locator('[data-testid="undo"]').isVisible(), 'Undo in the ⋯ menu');
    await page.keyboard.press('Escape');
    await until(async () => !(await page.locator('[data-testid="undo"]').isVisible()), 'the menu closed');
    const send = await page.locator('[data-testid="send"]').boundingBox();
    assert.ok(send.height >= 44, `Send is ${send.height}px tall`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('who answered reads as a name: “curl” in the notice and the decision log, the browser as “Headless Chrome on Linux”', async () => {
    const page = await loggedInPage(browser, server);
    await clickNewSession(page);
    await page.fill('[data-testid="composer-input"]', 'run: echo named');
    await page.click('[data-testid="send"]');
    const dialog = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
    await dialog.waitFor();
    const id = await dialog.getAttribute('data-id');
    const res = await fetch(`${server.base}/permission/${id}/reply`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'User-Agent': 'curl/8.5.0', Authorization: 'Basic ' + Buffer.from(`tandem:${password}`).toString('base64') },
      body: JSON.stringify({ reply: 'once' }),
    });
    assert.equal(res.status, 200);
    const note = page.locator('[data-testid="toast"]', { hasText: 'another client' });
    await note.waitFor();
    assert.match(await note.innerText(), /— curl\.?$/);

    // The browser answers the next one itself.
    await page.fill('[data-testid="composer-input"]', 'run: echo by-the-browser');
    await page.click('[data-testid="send"]');
    await dialog.waitFor();
    const second = await dialog.getAttribute('data-id');
    await dialog.locator('[data-testid="approve-once"]').click();
    await dialog.waitFor({ state: 'detached' });

    await page.locator('nav a[href="#/permissions"]').click();
    const history = page.locator('[data-testid="history"]');
    await history.locator(`tr[data-request="${id}"]`).waitFor();
    assert.match(await history.locator(`tr[data-request="${id}"]`).innerText(), /\bcurl\b/);
    assert.doesNotMatch(await history.innerText(), /Mozilla|curl\/8/);
    assert.match(await history.locator(`tr[data-request="${second}"]`).innerText(), /Headless Chrome on Linux/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a deleted session’s link says “Session not found” once', async () => {
    const { data: s } = await rest(server, 'POST', '/session', {});
    await rest(server, 'DELETE', `/session/${s.id}`);
    const signedIn = await loggedInPage(browser, server);
    // A page opened on the link: its first load, the session view and the event stream's resync each load it.
    const page = await signedIn.context().newPage();
    await page.goto(`${server.base}/#/session/${s.id}`);
    await page.locator('[data-testid="toast"]', { hasText: 'Session not found' }).first().waitFor();
    await until(async () => new URL(page.url()).hash === '#/', 'back on the session list');
    // Every load of the missing session has answered by the time the list shows: none is pending.
    await until(async () => (await page.evaluate(() => performance.getEntriesByType('resource').filter((r) => r.name.includes(`/session/`) && r.responseEnd === 0).length)) === 0, 'the loads answered');
    assert.deepEqual(await page.locator('[data-testid="toast"]').allInnerTexts(), ["Session not found"]);
    await page.context().close();
  });

  test('a rule for a permission no tool asks for is refused with a clear error', async () => {
    const page = await loggedInPage(browser, server);
    await page.locator('nav a[href="#/permissions"]').click();
    const form = page.locator('[data-testid="add-rule"]');
    await form.locator('input[aria-label="Permission"]').fill('bsah');
    await form.locator('input[aria-label="Pattern"]').fill('rm *');
    await form.locator('button[type="submit"]').click();
    const err = page.locator('[data-testid="toast"]', { hasText: 'bsah' });
    await err.waitFor();
    assert.match(await err.innerText(), /permission "bsah": no tool asks for it; the permissions are .*bash/);
    assert.equal((await rest(server, 'GET', '/permission/grant')).data.length, 0);
    await page.context().close();
  });

  test('the bell says in a sentence why this browser cannot be notified', async () => {
    // Chromium without a push service refuses the subscription with "Registration failed - permission denied".
    const page = await loggedInPage(browser, server, { permissions: ['notifications'] });
    const bell = page.locator('[data-testid="push-toggle"]');
    await until(async () => (await bell.getAttribute('data-state')) === 'off', 'the bell');
    await bell.click();
    const note = page.locator('[data-testid="toast"]').last();
    await note.waitFor();
    const text = await note.innerText();
    assert.doesNotMatch(text, /Registration failed|permission denied/);
    assert.match(text, /This browser refused to sign up for notifications/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
