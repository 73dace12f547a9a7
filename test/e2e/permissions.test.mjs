// Browser end-to-end test of the permissions page (issue 19, issue 20's missing features): the
// remembered answers listed and revoked, a rule added by hand, the decision log read.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, rest, until, shot } from './harness.mjs';

const why = missing();

describe('the permissions page', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('lists what “always” remembered with the decision log, revokes it, and adds a reject rule', async () => {
    // Another client answers "always" to a command, so there is a grant and a decision to show.
    const sid = (await rest(server, 'POST', '/session', {})).data.id;
    await rest(server, 'POST', `/session/${sid}/prompt_async`, { parts: [{ type: 'text', text: 'run: ls -a' }] });
    const asked = await until(async () => (await rest(server, 'GET', '/permission')).data[0], 'the request');
    await rest(server, 'POST', `/permission/${asked.id}/reply`, { reply: 'always' });
    await until(async () => (await rest(server, 'GET', '/permission/grant')).data.length === 1, 'the grant');

    const page = await loggedInPage(browser, server);
    await page.locator('nav a[href="#/permissions"]').click();
    const view = page.locator('[data-testid="permissions-page"]');
    await view.waitFor();
    const row = view.locator('[data-testid="grants"] tr[data-pattern="ls *"]');
    await row.waitFor();
    assert.match(await row.innerText(), /allow\s+bash\s+ls \*/);
    const logged = view.locator(`[data-testid="history"] tr[data-request="${asked.id}"]`);
    await logged.waitFor();
    assert.match(await logged.innerText(), /bash ls -a/);
    assert.match(await logged.innerText(), /always/);

    // A reject rule added by hand is a deny grant for the project.
    const form = view.locator('[data-testid="add-rule"]');
    await form.locator('input[aria-label="Permission"]').fill('bash');
    await form.locator('input[aria-label="Pattern"]').fill('git push *');
    await form.locator('button[type="submit"]').click();
    await view.locator('[data-testid="grants"] tr[data-pattern="git push *"]').waitFor();
    const grants = (await rest(server, 'GET', '/permission/grant')).data;
    assert.deepEqual(grants.map((g) => [g.action, g.permission, g.pattern]).sort(), [
      ['allow', 'bash', 'ls *'],
      ['deny', 'bash', 'git push *'],
    ]);
    await shot(page, 'permissions');

    // Revoking the "always" asks again next time.
    await row.locator('[data-testid="revoke"]').click();
    await row.waitFor({ state: 'detached' });
    assert.deepEqual(
      (await rest(server, 'GET', '/permission/grant')).data.map((g) => g.pattern),
      ['git push *'],
    );
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
