// Browser end-to-end test of terminal tab names (issue 20, item 10): "Shell 1", "Shell 2", never
// the server's "Terminal 2BMq".
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, rest, until } from './harness.mjs';

const why = missing();

describe('terminal tabs', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('are named Shell 1, Shell 2…, also for a terminal another client opened without a title', async () => {
    const page = await loggedInPage(browser, server);
    await page.locator('nav a[href="#/terminal"]').click();
    const tabs = page.locator('[data-testid="terminal-tab"]');
    await page.locator('[data-testid="new-terminal"]').click();
    await until(async () => (await tabs.count()) === 1, 'the first tab');
    await page.locator('[data-testid="new-terminal"]').click();
    await until(async () => (await tabs.count()) === 2, 'the second tab');
    assert.deepEqual(await tabs.allInnerTexts(), ['Shell 1', 'Shell 2']);
    const titles = (await rest(server, 'GET', '/pty')).data.map((p) => p.title).sort();
    assert.deepEqual(titles, ['Shell 1', 'Shell 2'], 'the names are the terminals’ titles, for every client');

    // Another client opens one with the server's default title.
    const other = (await rest(server, 'POST', '/pty', {})).data;
    assert.match(other.title, /^Terminal /);
    await until(async () => (await tabs.count()) === 3, 'the third tab');
    assert.deepEqual(await tabs.allInnerTexts(), ['Shell 1', 'Shell 2', 'Shell 3']);
    for (const p of (await rest(server, 'GET', '/pty')).data) await rest(server, 'DELETE', `/pty/${p.id}`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
