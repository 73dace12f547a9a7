// The approval, question and form flows on a desktop and a phone, light and dark, and once with the
// keyboard alone, each screen checked by axe-core for serious and critical violations.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, startTandem, launchBrowser, loggedInPage, rest, until, everything, shot, clickNewSession } from './harness.mjs';
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

async function send(page, text) {
  const box = page.locator('[data-testid="composer-input"]');
  await box.fill(text);
  await box.press('Enter');
  await page.waitForURL(/#\/session\/ses_/);
}

/** The screen fits the window: nothing scrolls sideways and the dialog is inside it. */
async function fits(page, dialog, width) {
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide <= width, `the page scrolls sideways: ${wide}px`);
  const box = await dialog.boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= width + 0.5, `the dialog sticks out: ${JSON.stringify(box)}`);
}

// The ones the README shows; UPDATE_SCREENSHOTS=1 rewrites these and leaves the others in the temporary directory.
const committed = new Set(['flow-approval-desktop-dark', 'flow-approval-phone-light', 'flow-question-phone-dark', 'flow-form-phone-dark']);

async function flowShot(page, name) {
  if (process.env.UPDATE_SCREENSHOTS !== '1' || committed.has(name)) await shot(page, name);
}

async function noSerious(page, where) {
  const found = await seriousViolations(page);
  assert.deepEqual(found, [], `axe on ${where}:\n${found.join('\n')}`);
}

describe('the approval, question and form flows', { skip: why || false }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startTandem();
    browser = await launchBrowser();
    const added = await rest(server, 'POST', '/mcp', { name: 'everything', config: { type: 'local', command: ['node', everything, 'stdio'] } });
    assert.equal(added.status, 200, JSON.stringify(added.data));
    await until(async () => (await rest(server, 'GET', '/mcp')).data.everything?.status === 'connected', 'server-everything to connect', 20000);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  for (const [device, size] of sizes) {
    for (const theme of themes) {
      test(`on a ${device} (${size.width}×${size.height}) in ${theme}: approve, answer, fill in`, async () => {
        const page = await loggedInPage(browser, server, contextOptions(size, theme));
        assert.equal(await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches), theme === 'dark');
        if (device === 'phone') await clickNewSession(page);
        const tag = `${device}-${theme}`;

        // Approval
        await send(page, 'run: echo matrix && ls');
        const perm = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
        await perm.waitFor();
        assert.match(await perm.locator('[data-testid="permission-command"]').innerText(), /echo matrix && ls/);
        await fits(page, perm, size.width);
        await noSerious(page, `the approval (${tag})`);
        await flowShot(page, `flow-approval-${tag}`);
        await perm.locator('[data-testid="approve-once"]').click();
        await perm.waitFor({ state: 'detached' });
        await page.locator('[data-testid="tool"][data-tool="bash"][data-status="completed"]').waitFor();

        // Question
        await send(page, 'ask: Which DB? | Postgres | SQLite');
        const q = page.locator('[data-testid="pending-dialog"][data-kind="question"]');
        await q.waitFor();
        await q.getByText('SQLite', { exact: true }).click();
        await fits(page, q, size.width);
        await noSerious(page, `the question (${tag})`);
        await flowShot(page, `flow-question-${tag}`);
        await q.locator('[data-testid="question-submit"]').click();
        await q.waitFor({ state: 'detached' });
        await page.locator('[data-testid="tool"][data-tool="question"][data-status="completed"]').waitFor();

        // Form
        await send(page, 'mcp: everything trigger-elicitation-request {}');
        const mcpPerm = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
        const form = page.locator('[data-testid="pending-dialog"][data-kind="elicitation"]');
        await Promise.race([mcpPerm.waitFor(), form.waitFor()]);
        if (await mcpPerm.count()) await mcpPerm.locator('[data-testid="approve-once"]').click();
        await form.locator('[data-field="name"] input').fill('Grace Hopper');
        await fits(page, form, size.width);
        await noSerious(page, `the form (${tag})`);
        await flowShot(page, `flow-form-${tag}`);
        await form.locator('[data-testid="elicit-accept"]').click();
        await form.waitFor({ state: 'detached' });
        const done = page.locator('[data-testid="tool"][data-status="completed"]', { hasText: 'elicitation' });
        await done.waitFor({ timeout: 15000 });
        assert.deepEqual(page.errors, []);
        await page.context().close();
      });
    }
  }

  test('with the keyboard alone: approve, reject with a message, answer a question and fill in a form', async () => {
    const page = await loggedInPage(browser, server, { viewport: { width: 1440, height: 900 } });
    const active = () =>
      page.evaluate(() => {
        const e = document.activeElement;
        return { tag: e?.tagName, testid: e?.dataset?.testid || '', label: e?.getAttribute('aria-label') || '', text: (e?.innerText || e?.value || '').trim().slice(0, 40), type: e?.type || '', value: e?.value || '' };
      });
    // Tab (or Shift+Tab) until the focused element is what is wanted; a person can get there.
    async function tabTo(what, match, back = false) {
      for (let i = 0; i < 80; i++) {
        if (match(await active())) return;
        await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
      }
      assert.fail(`Tab never reaches ${what}; the focus is on ${JSON.stringify(await active())}`);
    }
    const composer = (a) => a.testid === 'composer-input';
    async function type(text) {
      await tabTo('the composer', composer);
      await page.keyboard.type(text);
      await page.keyboard.press('Enter');
    }

    // Approve: Tab to "Allow once", Enter.
    await type('run: echo keyboard-approved');
    const perm = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
    await perm.waitFor();
    // The panel takes no focus (the keys of whoever is typing stay theirs); a screen reader is told.
    const told = page.locator('[data-testid="pending-announce"]');
    assert.equal(await told.getAttribute('aria-live'), 'assertive');
    await until(async () => /^Waiting for you: permission for bash: echo keyboard-approved\./.test(await told.innerText()), 'the arrival to be announced');
    await noSerious(page, 'the approval');
    await tabTo('Allow once', (a) => a.testid === 'approve-once');
    await page.keyboard.press('Enter');
    await perm.waitFor({ state: 'detached' });
    await page.locator('[data-testid="tool"][data-status="completed"]', { hasText: 'keyboard-approved' }).waitFor();

    // Reject with a message: Tab to the message, type it, Enter rejects.
    await type('run: echo keyboard-rejected');
    await perm.waitFor();
    await tabTo('the rejection message', (a) => a.tag === 'INPUT' && /reject/i.test(a.label));
    await page.keyboard.type('not from the keyboard test');
    await page.keyboard.press('Enter');
    await perm.waitFor({ state: 'detached' });
    const rejected = page.locator('[data-testid="tool"][data-status="error"]', { hasText: 'keyboard-rejected' });
    await rejected.waitFor();
    const sid = page.url().split('/session/')[1];
    const msgs = (await rest(server, 'GET', `/session/${sid}/message`)).data;
    assert.ok(JSON.stringify(msgs).includes('not from the keyboard test'), 'the rejection message did not reach the agent');

    // A question: Tab to the options, arrows choose, then Answer.
    await type('ask: Which DB? | Postgres | SQLite');
    const q = page.locator('[data-testid="pending-dialog"][data-kind="question"]');
    await q.waitFor();
    await until(async () => (await told.innerText()).startsWith('Waiting for you: a question: Which DB?'), 'the question to be announced');
    await tabTo('the first option', (a) => a.tag === 'INPUT' && a.type === 'radio');
    await page.keyboard.press('ArrowDown');
    assert.equal(await q.locator('input[type="radio"]:checked').count(), 1, 'the arrow chose nothing');
    await noSerious(page, 'the question');
    await tabTo('Answer', (a) => a.testid === 'question-submit');
    await page.keyboard.press('Enter');
    await q.waitFor({ state: 'detached' });
    await until(async () => JSON.stringify((await rest(server, 'GET', `/session/${sid}/message`)).data).includes('SQLite'), 'the answer SQLite');

    // A form: approve the MCP call with its key, Tab to the name, type, Enter submits.
    await type('mcp: everything trigger-elicitation-request {}');
    const form = page.locator('[data-testid="pending-dialog"][data-kind="elicitation"]');
    const mcpPerm = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
    await Promise.race([mcpPerm.waitFor(), form.waitFor()]);
    if (await mcpPerm.count()) {
      await tabTo('Allow once', (a) => a.testid === 'approve-once');
      await page.keyboard.press('Enter');
    }
    await form.waitFor();
    await tabTo('the name field', (a) => a.tag === 'INPUT' && a.type === 'text' && a.value === '' && a.testid === '' && !/reject|custom/i.test(a.label));
    await page.keyboard.type('Keyboard Person');
    assert.equal(await form.locator('[data-field="name"] input').inputValue(), 'Keyboard Person', 'the focus was in another field');
    await noSerious(page, 'the form');
    await page.keyboard.press('Enter');
    await form.waitFor({ state: 'detached' });
    await page.locator('[data-testid="tool"][data-status="completed"]', { hasText: 'elicitation' }).waitFor({ timeout: 15000 });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
