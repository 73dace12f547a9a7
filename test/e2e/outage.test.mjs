// A crashed server (issue 30, item 13): the page says so in a banner, not only in a small
// "Reconnecting"; a page opened meanwhile gets the service worker's offline page; and once the
// server is back, the terminals that died with it are named instead of vanishing without a word.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { missing, startTandem, launchBrowser, loggedInPage, until } from './harness.mjs';

const why = missing();

describe('when the server crashes', { skip: why || false }, () => {
  let browser, server;
  after(async () => {
    await server?.stop();
    await browser?.close();
  });

  test('a banner says so, a new page gets the offline page, and lost terminals are named after the restart', { timeout: 120000 }, async () => {
    browser = await launchBrowser();
    server = await startTandem();
    const page = await loggedInPage(browser, server);
    await until(() => page.evaluate(() => !!navigator.serviceWorker.controller), 'the service worker to control the page');
    await page.locator('nav a[href="#/terminal"]').click();
    await page.getByTestId('new-terminal').click();
    await page.locator('[data-testid="terminal-tab"]', { hasText: 'Shell 1' }).waitFor();
    await page.locator('.xterm').waitFor();
    await page.locator('nav a[href="#/"]').click();

    // The crash: no shutdown event, the connection just drops.
    const exited = new Promise((r) => server.proc.once('exit', r));
    server.proc.kill('SIGKILL');
    await exited;
    const banner = page.getByTestId('outage');
    await banner.waitFor({ timeout: 20000 });
    assert.match(await banner.innerText(), /not answering/);
    assert.match(await banner.innerText(), /What you typed stays here/);

    const other = await page.context().newPage();
    await other.goto(server.base + '/');
    await other.getByTestId('offline-page').waitFor();
    assert.match(await other.locator('h1').innerText(), /tandem is not reachable/);
    await other.close();

    // (no stop(): the process is gone, and it keeps the directories for the restart)
    server = await startTandem({ root: server.root, port: server.port });
    await banner.waitFor({ state: 'detached', timeout: 40000 });
    await page.waitForSelector('[data-testid="conn"][data-state="live"]');
    await page.locator('[data-testid="toast"]', { hasText: 'Connected to the server again' }).first().waitFor();

    await page.locator('nav a[href="#/terminal"]').click();
    const lostNote = page.getByTestId('lost-terminals');
    await lostNote.waitFor();
    assert.match(await lostNote.innerText(), /Shell 1 is gone: the server restarted/);
    assert.equal(await page.locator('[data-testid="terminal-tab"]').count(), 0);
    assert.deepEqual(page.errors, []);
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
