// Browser end-to-end test of a subagent's approval in the web UI (issue 36): the bash request of a
// `task` child session is shown in the parent's view, marked as the subagent's, answered there, and
// the parent's turn completes with the child's answer.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, rest, until } from './harness.mjs';

const why = missing();

describe('a subagent’s request', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('is shown and answered in the parent’s view, and the parent’s turn ends with the child’s answer', async () => {
    const page = await loggedInPage(browser, server);
    await page.fill('[data-testid="composer-input"]', 'task: general | run: ls');
    await page.press('[data-testid="composer-input"]', 'Enter');
    await page.waitForURL(/#\/session\/ses_/);
    const parent = page.url().split('/session/')[1];
    const dialog = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');

    // The task tool asks too (OpenCode's `task` permission) when the rules say ask: that one is the parent's own.
    const req = await until(async () => {
      const list = (await rest(server, 'GET', '/permission')).data;
      const task = list.find((p) => p.permission === 'task');
      if (task) await rest(server, 'POST', `/permission/${task.id}/reply`, { reply: 'once' });
      return list.find((p) => p.permission === 'bash');
    }, 'the child’s bash request', 20000);
    assert.notEqual(req.sessionID, parent);
    assert.equal(req.parentSessionID, parent);

    // The parent's task card says its subagent waits, and opens the request in the parent's view.
    const waiting = page.locator('[data-testid="tool"][data-tool="task"] [data-testid="subagent-waiting"]');
    await waiting.click();
    await until(async () => (await dialog.getAttribute('data-id')) === req.id, 'the dialog to show the child’s request');
    const tag = await dialog.locator('[data-testid="subagent"]').innerText();
    assert.match(tag, /^Subagent · .*@general subagent/);
    assert.equal(await dialog.locator('.origin a').getAttribute('href'), `#/session/${parent}`);
    assert.ok(page.url().endsWith(`/session/${parent}`), 'the person stays in the parent’s view');
    // The session list marks the parent as waiting for the person.
    await page.locator(`[data-testid="session-list"] a[href="#/session/${parent}"] .dot.warn`).waitFor();

    await dialog.locator('[data-key="once"]').click();
    await dialog.waitFor({ state: 'detached' });
    const task = page.locator('[data-testid="tool"][data-tool="task"]');
    await until(async () => (await task.getAttribute('data-status')) === 'completed', 'the task to complete', 20000);
    const msgs = await until(async () => {
      const st = (await rest(server, 'GET', '/session/status')).data;
      return !st[parent] || st[parent].type === 'idle' ? (await rest(server, 'GET', `/session/${parent}/message`)).data : null;
    }, 'the parent’s turn to end', 20000);
    const part = msgs.flatMap((m) => m.parts).find((p) => p.type === 'tool' && p.tool === 'task');
    assert.match(part.state.output, /<task_result>[\s\S]*README\.md[\s\S]*<\/task_result>/);
    assert.equal(msgs.at(-1).info.role, 'assistant');
    assert.equal(msgs.at(-1).info.finish === 'error' || !!msgs.at(-1).info.error, false);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
