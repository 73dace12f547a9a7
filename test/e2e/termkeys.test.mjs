// The phone's terminal keys (issue 30, item 9): at 390×844 a row of Esc, Ctrl, Tab and the arrows
// sits above the terminal, and what it sends is what a keyboard would, read off the PTY WebSocket.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, until } from './harness.mjs';

const why = missing();
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

describe('terminal keys on a phone', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('Ctrl then c sends ^C, and Esc, Tab and the arrows send their sequences', async () => {
    const page = await loggedInPage(browser, server, phone);
    const sent = [];
    page.on('websocket', (ws) => {
      if (ws.url().includes('/pty/')) ws.on('framesent', (f) => typeof f.payload === 'string' && sent.push(f.payload));
    });
    await page.locator('nav a[href="#/terminal"]').click();
    await page.getByTestId('new-terminal').click();
    await page.locator('.xterm').waitFor();
    const keys = page.getByTestId('term-keys');
    await keys.waitFor();
    await until(() => page.locator('.xterm-rows').innerText().then((t) => /\$|#/.test(t)), 'the shell prompt');
    const key = (name) => keys.locator(`[data-key="${name}"]`);
    const expectSent = async (want, what) => {
      await until(() => sent.includes(want), what);
      sent.length = 0;
    };

    await key('Ctrl').tap();
    await until(async () => (await key('Ctrl').getAttribute('aria-pressed')) === 'true', 'Ctrl to show it is held');
    await page.keyboard.type('c');
    await expectSent('\x03', 'Ctrl then c to send ^C');
    // The key row is drawn again on the next frame: wait for it, do not read it once.
    await until(async () => (await key('Ctrl').getAttribute('aria-pressed')) === 'false', 'Ctrl to let go after one key');
    assert.ok(!sent.includes('c'));

    for (const [name, seq] of [
      ['Escape', '\x1b'],
      ['Tab', '\t'],
      ['Up', '\x1b[A'],
      ['Down', '\x1b[B'],
      ['Right', '\x1b[C'],
      ['Left', '\x1b[D'],
    ]) {
      await key(name).tap();
      await expectSent(seq, `${name} to send ${JSON.stringify(seq)}`);
    }
    assert.ok(await page.evaluate(() => document.activeElement?.classList.contains('xterm-helper-textarea')), 'the terminal keeps the focus');

    // In application cursor mode (vim, less) the arrows are SS3 sequences.
    await page.keyboard.type("printf '\\033[?1h'\n");
    await until(async () => {
      sent.length = 0;
      await key('Up').tap();
      await new Promise((r) => setTimeout(r, 200));
      return sent.includes('\x1bOA');
    }, 'Up to send ESC O A in application cursor mode');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('the row is not shown on a wide screen', async () => {
    const page = await loggedInPage(browser, server);
    await page.locator('nav a[href="#/terminal"]').click();
    await page.locator('.xterm').waitFor();
    assert.equal(await page.getByTestId('term-keys').isVisible(), false);
    await page.context().close();
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
