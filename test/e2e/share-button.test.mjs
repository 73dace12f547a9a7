// Share in the session header (issue 30 item 5): the owner shares a session from the UI, copies
// the link, a stranger opens it and sees no absolute path of the project (tool inputs, outputs,
// diffs, attached files), and Unshare closes it.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { missing, browserAndServer, loggedInPage, rest, until } from './harness.mjs';

const why = missing();

describe('Share in the session header', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('shares from the menu, copies the link, shows no project path to a stranger, and unshares', async () => {
    const { data: s } = await rest(server, 'POST', '/session', {});
    const notes = path.join(server.project, 'notes.txt');
    writeFileSync(notes, 'some notes\n');
    const say = async (parts) => assert.equal((await rest(server, 'POST', `/session/${s.id}/message`, { parts, model: { providerID: 'demo', modelID: 'demo' } })).status, 200);
    await say([{ type: 'text', text: `read: ${notes}` }]);
    await say([
      { type: 'text', text: `have a look at ${notes}` },
      { type: 'file', mime: 'text/plain', filename: 'notes.txt', url: `file://${notes}` },
    ]);

    const page = await loggedInPage(browser, server, { permissions: ['clipboard-read', 'clipboard-write'] });
    await page.goto(`${server.base}/#/session/${s.id}`);
    await page.waitForSelector('[data-testid="msg-assistant"]');
    await page.click('[data-testid="share"]');
    await page.click('[data-testid="share-create"]');
    const url = page.locator('[data-testid="share-url"]');
    await url.waitFor();
    const link = await url.inputValue();
    assert.match(link, new RegExp(`^${server.base}/s/[A-Za-z0-9_-]{43}$`));
    const { data: stored } = await rest(server, 'GET', `/session/${s.id}`);
    assert.equal(stored.share?.url, link, 'the link is the session’s');
    await page.click('[data-testid="share-copy"]');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), link);
    await page.keyboard.press('Escape');
    // The dialog closes on the next frame: wait for it, do not read it once.
    await page.locator('[data-testid="share-dialog"]').waitFor({ state: 'detached' });
    await until(async () => (await page.textContent('[data-testid="share"]')) === 'Shared', 'the button to read Shared');

    // A stranger: no cookie. Nothing on the page or in what it loads names the project's directory.
    const stranger = await browser.newContext();
    stranger.setDefaultTimeout(15000);
    const shared = await stranger.newPage();
    const bodies = [];
    shared.on('response', async (r) => {
      if (r.url().includes('/s/')) bodies.push(await r.text().catch(() => ''));
    });
    await shared.goto(link);
    await shared.waitForSelector('[data-testid="tool"]');
    await shared.locator('[data-testid="tool"] .tool-head').first().click();
    await until(() => bodies.length >= 2, 'the shared session and messages');
    const html = await shared.content();
    for (const dir of new Set([server.project, realpathSync(server.project), server.root, realpathSync(server.root)])) {
      assert.ok(!html.includes(dir), `the shared page shows ${dir}: ${html.slice(html.indexOf(dir) - 200, html.indexOf(dir) + 80)}`);
      for (const b of bodies) assert.ok(!b.includes(dir), `the shared data carries ${dir}: ${b.slice(b.indexOf(dir) - 80, b.indexOf(dir) + 80)}`);
    }
    assert.match(await shared.textContent('[data-testid="conversation"]'), /notes\.txt/);

    // Unshare from the dialog: the stranger's page is told, the button reads Share again.
    await page.click('[data-testid="share"]');
    await page.click('[data-testid="unshare"]');
    await page.locator('[data-testid="share-create"]').waitFor();
    await page.click('[data-testid="share-close"]');
    assert.equal(await page.textContent('[data-testid="share"]'), 'Share');
    await until(async () => (await shared.locator('[data-testid="share-error"]').count()) > 0, 'the shared page to learn the link was revoked');
    assert.deepEqual(page.errors, []);
    await stranger.close();
    await page.context().close();
  });
});
