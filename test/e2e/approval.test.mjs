// Browser end-to-end tests of the approval dialog built from a request's `decisions` list (issue
// 19), and of how it reads (issue 20, item 10): the working directory, MCP tools without
// "Always allows: *", a path outside the project without raw JSON, chosen patterns.
import { test, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { missing, browserAndServer, loggedInPage, rest, until, everything, shot } from './harness.mjs';

const why = missing();

async function prompt(page, text) {
  await page.fill('[data-testid="composer-input"]', text);
  await page.press('[data-testid="composer-input"]', 'Enter');
  await page.waitForURL(/#\/session\/ses_/);
}

const dialogOf = (page) => page.locator('[data-testid="pending-dialog"][data-kind="permission"]');

describe('the approval dialog', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('offers the request’s decisions in order, names the working directory, and remembers only the ticked patterns', async () => {
    const page = await loggedInPage(browser, server);
    await prompt(page, 'run: git status --short && ls -a');
    const dialog = dialogOf(page);
    await dialog.waitFor();
    const [req] = (await rest(server, 'GET', '/permission')).data;
    const keys = await dialog.locator('[data-testid="decisions"] button').evaluateAll((els) => els.map((e) => e.getAttribute('data-key')));
    assert.deepEqual(keys, req.decisions.map((d) => d.key));
    const labels = await dialog.locator('[data-testid="decisions"] button').allInnerTexts();
    req.decisions.forEach((d, i) => assert.ok(labels[i].startsWith(d.label), `${labels[i]} is not labelled ${d.label}`));

    assert.equal(await dialog.locator('[data-testid="permission-cwd"] code').innerText(), server.project);

    const boxes = dialog.locator('[data-testid="remember"] input[type="checkbox"]');
    assert.deepEqual(await boxes.evaluateAll((els) => els.map((e) => e.getAttribute('data-pattern'))), ['git status *', 'ls *']);
    await dialog.locator('input[data-pattern="git status *"]').uncheck();
    await shot(page, 'approval-patterns');
    await dialog.locator('[data-key="always"]').click();
    await dialog.waitFor({ state: 'detached' });
    const grants = (await rest(server, 'GET', '/permission/grant')).data;
    assert.deepEqual(
      grants.map((g) => [g.permission, g.pattern, g.action]),
      [['bash', 'ls *', 'allow']],
    );
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('“reject and tell the agent why” asks for the reason first, then sends it', async () => {
    const page = await loggedInPage(browser, server);
    await prompt(page, 'run: echo never');
    const dialog = dialogOf(page);
    await dialog.waitFor();
    const id = await dialog.getAttribute('data-id');
    await dialog.locator('[data-key="reject-with-message"]').click();
    const input = dialog.locator('[data-testid="reject-message"]');
    await until(async () => (await input.evaluate((e) => e === document.activeElement)) && (await input.getAttribute('class')).includes('invalid'), 'the message box to ask for the reason');
    assert.equal((await rest(server, 'GET', '/permission')).data.length, 1, 'sent without a message');
    await input.fill('use printf instead');
    await dialog.locator('[data-key="reject-with-message"]').click();
    await dialog.waitFor({ state: 'detached' });
    const log = await until(async () => (await rest(server, 'GET', '/permission/history')).data.find((d) => d.requestID === id), 'the decision in the log');
    assert.equal(log.reply, 'reject-with-message');
    assert.equal(log.message, 'use printf instead');
    await page.context().close();
  });

  test('answers from the keyboard: s allows for the session, and the session is not asked again', async () => {
    const page = await loggedInPage(browser, server);
    await prompt(page, 'run: echo by-key');
    const sid = page.url().split('/session/')[1];
    const dialog = dialogOf(page);
    await dialog.waitFor();
    const id = await dialog.getAttribute('data-id');
    await page.locator('body').click({ position: { x: 5, y: 300 } }); // focus outside any field
    await page.keyboard.press('s');
    await dialog.waitFor({ state: 'detached' });
    const log = await until(async () => (await rest(server, 'GET', '/permission/history')).data.find((d) => d.requestID === id), 'the decision in the log');
    assert.equal(log.reply, 'session');
    await until(async () => !(await rest(server, 'GET', '/session/status')).data[sid], 'the turn to end');
    await prompt(page, 'run: echo by-key again');
    await until(async () => (await page.locator('[data-testid="tool"][data-status="completed"]').count()) === 2, 'the second call to run without asking');
    assert.equal((await rest(server, 'GET', '/permission')).data.length, 0);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a path outside the project reads as a sentence, not JSON, and “for this session” answers with its key', async () => {
    const outside = mkdtempSync(path.join(tmpdir(), 'tandem-outside-'));
    const page = await loggedInPage(browser, server);
    await prompt(page, `write: ${path.join(outside, 'x.txt')}\nhello\n`);
    const dialog = dialogOf(page);
    await dialog.waitFor();
    const id = await dialog.getAttribute('data-id');
    assert.equal(await dialog.locator('h3').innerText(), 'Allow access outside the project?');
    const text = await dialog.innerText();
    assert.match(await dialog.locator('[data-testid="permission-outside"]').innerText(), new RegExp(`outside the project ${server.project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.doesNotMatch(text, /[{}"]/, `raw JSON in the dialog:\n${text}`);
    await shot(page, 'approval-outside');
    await dialog.locator('[data-key="session"]').click();
    const log = await until(async () => (await rest(server, 'GET', '/permission/history')).data.find((d) => d.requestID === id), 'the decision in the log');
    assert.equal(log.reply, 'session');
    // The write itself asks next (edit); reject it.
    const edit = await until(async () => (await rest(server, 'GET', '/permission')).data[0], 'the edit request');
    await rest(server, 'POST', `/permission/${edit.id}/reply`, { reply: 'reject' });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  describe('an MCP tool', () => {
    before(async () => {
      const added = await rest(server, 'POST', '/mcp', { name: 'everything', config: { type: 'local', command: ['node', everything, 'stdio'] } });
      assert.equal(added.status, 200, JSON.stringify(added.data));
      await until(async () => (await rest(server, 'GET', '/mcp')).data.everything?.status === 'connected', 'server-everything to connect', 20000);
    });

    test('shows its arguments and says what a lasting answer covers in words, never “*”', async () => {
      const page = await loggedInPage(browser, server);
      await prompt(page, 'mcp: everything echo {"message":"hi there"}');
      const dialog = dialogOf(page);
      await dialog.waitFor();
      assert.equal(await dialog.locator('h3').innerText(), 'Call echo on the MCP server everything?');
      assert.match(await dialog.locator('[data-testid="permission-args"]').innerText(), /message\s+hi there/);
      assert.match(await dialog.locator('[data-testid="remember"]').innerText(), /every call of echo on everything/);
      // What the dialog says, apart from the link to the session (titled after the prompt).
      const text = await dialog.locator('[data-testid="permission"]').evaluate((el) => {
        const copy = el.cloneNode(true);
        copy.querySelector('.origin')?.remove();
        return copy.innerText ?? copy.textContent;
      });
      assert.doesNotMatch(text, /Always allows|\*|\{/, `the dialog says:\n${text}`);
      await shot(page, 'approval-mcp');
      await dialog.locator('[data-key="once"]').click();
      await dialog.waitFor({ state: 'detached' });
      await page.locator('[data-testid="tool"][data-status="completed"]').waitFor();
      assert.deepEqual(page.errors, []);
      await page.context().close();
    });
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
