// Every screen, not only the approval flows (issue 30, item 10): the inbox, a conversation with
// highlighted code and its context/cost meter, the composer's / and @ menus, the session's ⋯ menu on
// a phone, the Share and Connect a provider dialogs, the terminal, MCP, Permissions, the pairing dialog, the sign-in form and a
// refused pairing link, at 1440×900 and 390×844, light and dark; axe-core finds no serious or
// critical violation on any of them.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, startTandem, launchBrowser, loggedInPage, rest, until, everything } from './harness.mjs';
import { seriousViolations } from './axe.mjs';

const why = missing();
const sizes = [
  ['desktop', { width: 1440, height: 900 }],
  ['phone', { width: 390, height: 844 }],
];
const themes = ['light', 'dark'];

function contextOptions(size, theme) {
  const o = { viewport: size, colorScheme: theme };
  if (size.width < 500) Object.assign(o, { deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  return o;
}

describe('every screen, both themes, both sizes', { skip: why || false }, () => {
  let server, browser, sessionID;

  before(async () => {
    server = await startTandem();
    browser = await launchBrowser();
    const added = await rest(server, 'POST', '/mcp', { name: 'everything', config: { type: 'local', command: ['node', everything, 'stdio'] } });
    assert.equal(added.status, 200, JSON.stringify(added.data));
    await rest(server, 'POST', '/mcp', { name: 'broken', config: { type: 'local', command: ['/nonexistent/mcp-server'] } });
    await until(async () => (await rest(server, 'GET', '/mcp')).data.everything?.status === 'connected', 'server-everything to connect', 20000);
    const { data: s } = await rest(server, 'POST', '/session', { title: 'Screens' });
    sessionID = s.id;
    const text = '\n```js\n// a comment, in the comment colour\nconst answer = 42; // and another\n```\n';
    assert.equal((await rest(server, 'POST', `/session/${sessionID}/prompt_async`, { parts: [{ type: 'text', text }] })).status, 204);
    await until(async () => JSON.stringify((await rest(server, 'GET', `/session/${sessionID}/message`)).data).includes('You said'), 'the answer');
    await rest(server, 'POST', '/pty', { title: 'Shell 1' });
    await rest(server, 'POST', '/permission/grant', { permission: 'bash', pattern: 'git status *', action: 'allow' }).catch(() => {});
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  for (const [device, size] of sizes) {
    for (const theme of themes) {
      test(`${device} ${theme}`, { timeout: 120000 }, async () => {
        const found = [];
        const check = async (page, where) => {
          for (const v of await seriousViolations(page)) found.push(`${where}: ${v}`);
        };
        const page = await loggedInPage(browser, server, contextOptions(size, theme));
        const go = async (hash, ready) => {
          await page.evaluate((h) => (location.hash = h), hash);
          await page.locator(ready).first().waitFor();
        };
        await go('#/', '.session-list');
        await check(page, 'inbox');
        await go(`#/session/${sessionID}`, '.hljs-comment');
        await check(page, 'conversation with code');
        await page.getByTestId('meter').waitFor();
        await check(page, 'context and cost meter');
        const input = page.getByTestId('composer-input');
        await input.click();
        await input.pressSequentially('/');
        await page.getByTestId('command-menu').waitFor();
        await check(page, 'the / commands menu');
        await input.fill('');
        await input.pressSequentially('see @READ');
        await page.getByTestId('file-menu').locator('li').first().waitFor();
        await check(page, 'the @ file menu');
        await input.fill('');
        if (size.width < 500) {
          await page.getByTestId('head-more').click();
          await page.getByTestId('undo').waitFor();
          await check(page, 'the session ⋯ menu');
        }
        await page.getByTestId('share').click();
        await page.getByTestId('share-create').waitFor();
        await check(page, 'the Share dialog');
        await page.getByTestId('share-create').click();
        await page.getByTestId('share-url').waitFor();
        await check(page, 'the Share dialog with its link');
        // Unshared again, so the next size and theme see the dialog as it opens the first time.
        await page.getByTestId('unshare').click();
        await page.getByTestId('share-create').waitFor();
        await page.keyboard.press('Escape');
        await page.getByTestId('share-dialog').waitFor({ state: 'detached' });
        await page.locator('select[aria-label="Model"]').selectOption('__connect');
        await page.getByTestId('connect-provider').waitFor();
        await until(async () => (await page.getByTestId('provider-id').locator('option').count()) > 1, 'the built-in providers listed');
        await check(page, 'Connect a provider');
        await page.getByTestId('provider-id').selectOption('__custom');
        await page.getByTestId('provider-custom-id').waitFor();
        await check(page, 'Connect a provider, custom');
        await page.keyboard.press('Escape');
        await page.getByTestId('connect-provider').waitFor({ state: 'detached' });
        await go('#/terminal', '[data-testid="terminal-tab"]');
        await page.locator('.xterm').waitFor();
        await check(page, 'terminal');
        await go('#/mcp', '[data-testid="mcp-status"]');
        await until(async () => (await page.locator('[data-testid="mcp-status"]').count()) >= 2, 'both MCP servers listed');
        await check(page, 'MCP');
        await go('#/permissions', 'main');
        await check(page, 'permissions');
        await page.getByTestId('pair-device').click();
        await page.getByTestId('pair-qr').waitFor();
        await check(page, 'pair a device');
        await page.keyboard.press('Escape');
        await page.context().close();

        const context = await browser.newContext(contextOptions(size, theme));
        const fresh = await context.newPage();
        await fresh.goto(server.base + '/');
        await fresh.getByTestId('login-form').waitFor();
        await check(fresh, 'sign in');
        await fresh.goto(server.base + '/pair#not-a-code');
        await fresh.getByTestId('pair-refused').waitFor();
        await check(fresh, 'refused pairing link');
        await context.close();
        assert.deepEqual(found, [], `axe:\n${found.join('\n')}`);
      });
    }
  }
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
