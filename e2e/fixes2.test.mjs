// Browser end-to-end tests for more of issue 20's problems (items 3, 5, 8, 9 and 11): each scenario
// is what a person did when the UI misbehaved.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, startTandem, launchBrowser, loggedInPage, rest, until, password, everything } from './harness.mjs';

const why = missing();

async function prompt(page, text) {
  await page.fill('[data-testid="composer-input"]', text);
  await page.press('[data-testid="composer-input"]', 'Enter');
  await page.waitForURL(/#\/session\/ses_/);
}

describe('more fixes of issue 20', { skip: why || false }, () => {
  let browser;

  before(async () => {
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
  });

  test('a restart keeps the browser signed in and the unsent draft; a #/session/… link survives signing in', async () => {
    let server = await startTandem();
    try {
      const page = await loggedInPage(browser, server);
      await prompt(page, 'hello before the restart');
      const sid = page.url().split('/session/')[1];
      await page.locator('[data-testid="msg-assistant"]').first().waitFor();
      await page.fill('[data-testid="composer-input"]', 'a draft I have not sent');

      await server.stop({ keep: true });
      await page.locator('[data-testid="conn"]:not([data-state="live"])').waitFor();
      server = await startTandem({ root: server.root, port: server.port });
      // The page finds the server again by itself, still signed in.
      await page.locator('[data-testid="conn"][data-state="live"]').waitFor({ timeout: 20000 });
      assert.equal(await page.locator('[data-testid="login-form"]').count(), 0, 'the restart signed the browser out');
      await page.reload();
      await page.locator('[data-testid="conn"][data-state="live"]').waitFor();
      assert.equal(await page.inputValue('[data-testid="composer-input"]'), 'a draft I have not sent');
      assert.deepEqual(page.errors, []);
      await page.context().close();

      // Another browser opens the session's link, signs in, and lands in that session.
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      context.setDefaultTimeout(15000);
      const other = await context.newPage();
      await other.goto(`${server.base}/#/session/${sid}`);
      await other.fill('[data-testid="login-form"] input[type="password"]', password);
      await other.click('[data-testid="login-form"] button[type="submit"]');
      await other.locator('[data-testid="msg-user"]', { hasText: 'hello before the restart' }).waitFor();
      assert.ok(other.url().endsWith(`#/session/${sid}`), other.url());
      const before = (await rest(server, 'GET', '/session')).data.length;
      await other.fill('[data-testid="composer-input"]', 'hello after signing in');
      await other.press('[data-testid="composer-input"]', 'Enter');
      await other.locator('[data-testid="msg-user"]', { hasText: 'hello after signing in' }).waitFor();
      assert.equal((await rest(server, 'GET', '/session')).data.length, before, 'typing created a new session');
      assert.ok(other.url().endsWith(`#/session/${sid}`), other.url());
      await context.close();
    } finally {
      await server.stop();
    }
  });

  test('the MCP page shows servers added elsewhere at once, keeps the ones added here across a restart, and removes them', async () => {
    let server = await startTandem();
    try {
      const page = await loggedInPage(browser, server);
      await page.click('nav >> text=MCP');
      await page.locator('[data-testid="mcp"]').waitFor();
      const card = (name) => page.locator(`[data-testid="mcp-server"][data-name="${name}"]`);

      // Another client adds a server: it shows up without a reload.
      const added = await rest(server, 'POST', '/mcp', { name: 'viarest', config: { type: 'local', command: ['node', everything, 'stdio'] } });
      assert.equal(added.status, 200, JSON.stringify(added.data));
      await card('viarest').locator('[data-testid="mcp-status"]', { hasText: 'connected' }).waitFor();

      // One added here, and one that cannot start: the toast says which is which.
      const form = page.locator('form.add-server');
      await form.locator('input').first().fill('inui');
      await form.locator('input.mono').fill(`node ${everything} stdio`);
      await form.locator('button[type="submit"]').click();
      await card('inui').locator('[data-testid="mcp-status"]', { hasText: 'connected' }).waitFor({ timeout: 20000 });
      await form.locator('input').first().fill('broken');
      await form.locator('input.mono').fill('/nonexistent/mcp-server');
      await form.locator('button[type="submit"]').click();
      await card('broken').locator('[data-testid="mcp-status"]', { hasText: 'failed' }).waitFor();
      const note = await page.locator('[data-testid="toast"]', { hasText: 'broken' }).innerText();
      assert.match(note, /failed/, `the toast for a server that failed says: ${note}`);

      await server.stop({ keep: true });
      server = await startTandem({ root: server.root, port: server.port });
      await page.locator('[data-testid="conn"][data-state="live"]').waitFor({ timeout: 20000 });
      await page.reload();
      await card('inui').locator('[data-testid="mcp-status"]', { hasText: 'connected' }).waitFor({ timeout: 20000 });
      await card('viarest').locator('[data-testid="mcp-status"]', { hasText: 'connected' }).waitFor({ timeout: 20000 });

      // Removing one asks in the page, then it is gone here, in another client, and from the server.
      const watcher = await loggedInPage(browser, server);
      await watcher.click('nav >> text=MCP');
      await watcher.locator('[data-testid="mcp-server"][data-name="inui"]').waitFor();
      await card('inui').locator('[data-testid="mcp-remove"]').click();
      const confirm = page.locator('[data-testid="confirm"]');
      await confirm.waitFor();
      assert.match(await confirm.innerText(), /Remove inui\?/);
      await confirm.locator('[data-testid="confirm-ok"]').click();
      await card('inui').waitFor({ state: 'detached' });
      await watcher.locator('[data-testid="mcp-server"][data-name="inui"]').waitFor({ state: 'detached' });
      const left = (await rest(server, 'GET', '/mcp')).data;
      assert.deepEqual(Object.keys(left).sort(), ['broken', 'viarest']);
      assert.deepEqual(page.errors, []);
      assert.deepEqual(watcher.errors, []);
      await watcher.context().close();
      await page.context().close();
    } finally {
      await server.stop();
    }
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
