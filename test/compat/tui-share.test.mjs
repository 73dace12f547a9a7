// OpenCode's terminal UI sharing a session on tandem: `/share` asks for consent, calls tandem's
// POST /session/{id}/share, shows the link in its sidebar and copies it to the clipboard (here tmux's
// buffer, through OSC 52). The link opens read-only in Chromium with no credentials, and `/unshare`
// closes it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { requiredInCI, startTandem, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

describe("OpenCode's terminal UI shares a session on tandem", { skip: tuiUnavailable(() => !existsSync(chromiumPath) && requiredInCI(`no Chromium at ${chromiumPath} (apt-get install chromium)`)) }, () => {
  let server;
  let term;
  let browser;

  before(async () => {
    server = await startTandem();
    term = new Terminal('share');
    term.attach(server);
    // Let the TUI's OSC 52 "copy to clipboard" land in a tmux buffer the test can read.
    term.tmux('set-option', '-g', 'set-clipboard', 'on');
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });

  after(async () => {
    await browser?.close();
    term?.stop();
    await server?.stop();
  });

  let link;

  test('/share shows the link and copies it; it opens read-only in Chromium without credentials', async () => {
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    await term.waitFor('the prompt', /Ask anything/, 90000);
    await term.type('share this walrus');
    await term.waitFor('the reply', /You said: share this walrus/);
    await term.type('/share');
    await term.waitFor('the consent dialog', /Are you sure you want to share it\?/);
    term.press('Enter');
    const screen = await term.waitFor('the toast', /Share URL copied to clipboard!/);
    assert.doesNotMatch(screen, /Failed to share|Error|404/);
    link = await waitFor('the link in the clipboard', () => {
      const r = spawnSync('tmux', ['-L', term.socket, 'show-buffer'], { encoding: 'utf8' });
      return r.status === 0 && r.stdout.startsWith(server.url.replace(/\/$/, '') + '/s/') ? r.stdout.trim() : null;
    });

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15000);
    const page = await context.newPage();
    await page.goto(link);
    await page.waitForSelector('[data-testid="msg-assistant"]');
    assert.match(await page.textContent('[data-testid="conversation"]'), /You said: share this walrus/);
    assert.equal(await page.locator('[data-testid="composer-input"]').count(), 0, 'read-only: no composer');
    await context.close();
  });

  test('/unshare closes the link', async () => {
    await sleep(300);
    await term.type('/unshare');
    await term.waitFor('the unshare toast', /Session unshared successfully/);
    const token = link.split('/s/')[1];
    const res = await fetch(`${server.url.replace(/\/$/, '')}/s/${token}/session`);
    assert.equal(res.status, 404);
  });
});
