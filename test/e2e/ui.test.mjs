// Browser end-to-end tests: the built tandem binary, Debian's Chromium, and
// the flows a person goes through in the web UI.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, shot, rest, until, everything, password, clickNewSession } from './harness.mjs';

const why = missing();

describe('the browser UI', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  // The API a scenario drives must be served: a route that went missing (404) fails the scenario
  // with the endpoint's name, instead of the browser timing out on a selector.
  async function needs(...paths) {
    for (const p of paths) {
      const res = await rest(server, 'GET', p);
      assert.notEqual(res.status, 404, `GET ${p} is not served: ${JSON.stringify(res.data)}`);
    }
  }

  async function prompt(page, text) {
    await page.fill('[data-testid="composer-input"]', text);
    await page.press('[data-testid="composer-input"]', 'Enter');
    await page.waitForURL(/#\/session\/ses_/);
  }

  test('logs in through the one-time link and lands on a clean URL', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15000);
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e));
    await page.goto(server.loginURL);
    await page.waitForSelector('[data-testid="conn"][data-state="live"]');
    assert.equal(page.url().includes('ticket'), false, `the ticket stays in the address bar: ${page.url()}`);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.httpOnly);
    assert.ok(session, `no HttpOnly cookie in ${JSON.stringify(cookies)}`);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(await page.evaluate(() => document.cookie), '', 'the session cookie is readable from script');
    await shot(page, 'login-link');

    // The link works once: a second browser that opens it gets the password form.
    const other = await browser.newContext();
    other.setDefaultTimeout(15000);
    const p2 = await other.newPage();
    await p2.goto(server.loginURL);
    await p2.waitForSelector('[data-testid="login-form"]');
    await p2.fill('input[type="password"]', 'not the password');
    await p2.click('[data-testid="login-form"] button[type="submit"]');
    await p2.waitForSelector('[data-testid="login-form"] [role="alert"]');
    await p2.fill('input[type="password"]', password);
    await p2.click('[data-testid="login-form"] button[type="submit"]');
    await p2.waitForSelector('[data-testid="conn"][data-state="live"]');
    await shot(p2, 'login-password');
    await other.close();
    assert.deepEqual(errors, []);
    await context.close();
  });

  test('runs `run: echo hi` through the demo model after approving it', async () => {
    const page = await loggedInPage(browser, server);
    await prompt(page, 'run: echo hi');
    const dialog = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
    await dialog.waitFor();
    assert.match(await dialog.locator('[data-testid="permission-command"]').innerText(), /echo hi/);
    assert.match(await page.title(), /^\(1\) /);
    assert.equal(await page.locator('[data-testid="pending-count"]').innerText(), '1');
    // Keyboard: focus leaves the composer, then `a` approves once.
    await dialog.locator('h3').click();
    await page.keyboard.press('a');
    await dialog.waitFor({ state: 'detached' });
    const tool = page.locator('[data-testid="tool"][data-tool="bash"][data-status="completed"]');
    await tool.waitFor();
    assert.match(await tool.locator('[data-testid="tool-output"]').innerText(), /^hi\s*$/m);
    assert.equal(await page.title(), 'tandem');
    await shot(page, 'approve-run');

    // A second command, shown in full, rejected from the keyboard with a message.
    await page.fill('[data-testid="composer-input"]', 'run: ls -la && git status --short | head -n 5');
    await page.press('[data-testid="composer-input"]', 'Enter');
    await dialog.waitFor();
    await page.locator('[data-testid="tool"][data-status="running"], [data-testid="tool"][data-status="pending"]').first().waitFor();
    await shot(page, 'ui');
    await dialog.locator('input.reject-msg').fill('not now');
    await dialog.locator('h3').click();
    await page.keyboard.press('r');
    await dialog.waitFor({ state: 'detached' });
    await page.locator('[data-testid="tool"][data-status="error"]').waitFor();
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a command that cannot be judged says why and offers no "Always"', async () => {
    const page = await loggedInPage(browser, server);
    await prompt(page, 'run: eval "echo judged-later"');
    const dialog = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
    await dialog.waitFor();
    assert.match(await dialog.locator('[data-testid="unjudged"]').innerText(), /eval: runs text built at run time/);
    assert.equal(await dialog.locator('[data-testid="approve-always"]').count(), 0);
    await dialog.locator('[data-testid="reject"]').click();
    await dialog.waitFor({ state: 'detached' });
    await page.locator('[data-testid="tool"][data-status="error"]').last().waitFor();
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('answers an `ask:` question', async (t) => {
    await needs('/question');
    const page = await loggedInPage(browser, server);
    await prompt(page, 'ask: Which DB? | Postgres | SQLite');
    const dialog = page.locator('[data-testid="pending-dialog"][data-kind="question"]');
    await dialog.waitFor();
    await dialog.getByText('SQLite', { exact: true }).click();
    await shot(page, 'question');
    await dialog.locator('[data-testid="question-submit"]').click();
    await dialog.waitFor({ state: 'detached' });
    await until(async () => (await rest(server, 'GET', '/question')).data.length === 0, 'the question to be answered');
    await page.locator('[data-testid="tool"][data-status="completed"]').first().waitFor();
    assert.match(await page.locator('[data-testid="conversation"]').innerText(), /SQLite/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('closes the dialog when another client approves through the REST API', async () => {
    const page = await loggedInPage(browser, server);
    await prompt(page, 'run: echo from-elsewhere');
    const dialog = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
    await dialog.waitFor();
    const id = await dialog.getAttribute('data-id');
    const res = await rest(server, 'POST', `/permission/${id}/reply`, { reply: 'once' });
    assert.equal(res.status, 200, JSON.stringify(res.data));
    await dialog.waitFor({ state: 'detached' });
    // The toast names the client that answered (here Node's fetch), or says "another client".
    const note = page.locator('[data-testid="toast"]', { hasText: /another client|answered by/ });
    await note.waitFor();
    await shot(page, 'answered-elsewhere');
    await page.locator('[data-testid="tool"][data-tool="bash"][data-status="completed"]').waitFor();
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('searches, renames, forks and deletes sessions', async () => {
    const page = await loggedInPage(browser, server);
    await prompt(page, 'hello there');
    await page.locator('[data-testid="msg-assistant"]').first().waitFor();
    const sid = page.url().split('/session/')[1];
    await page.click('[data-testid="session-title"]');
    await page.fill('input.rename', 'Renamed by the e2e test');
    await page.press('input.rename', 'Enter');
    await until(async () => (await rest(server, 'GET', `/session/${sid}`)).data.title === 'Renamed by the e2e test', 'the rename to reach the server');
    await page.fill('input[type="search"]', 'renamed by');
    assert.equal(await page.locator('[data-testid="session-list"] li').count(), 1);
    await page.fill('input[type="search"]', '');
    await page.click('button:has-text("Fork")');
    await page.waitForURL((u) => /#\/session\/ses_/.test(u.href) && !u.href.endsWith(sid));
    const fork = page.url().split('/session/')[1];
    assert.notEqual(fork, sid);
    await page.locator('[data-testid="msg-user"]', { hasText: 'hello there' }).waitFor();
    const titles = await page.locator('[data-testid="session-list"] .title').allInnerTexts();
    assert.equal(titles.length >= 2, true);
    await page.click('button:has-text("Delete")');
    await page.click('[data-testid="confirm-ok"]');
    await page.waitForURL((u) => !u.href.includes(fork));
    assert.equal((await rest(server, 'GET', `/session/${fork}`)).status, 404);
    await shot(page, 'sessions');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('types `echo hi` in a terminal and reads it back, also after a reload', async (t) => {
    await needs('/pty');
    const page = await loggedInPage(browser, server, {}, () => {
      // Keeps every WebSocket the page opens, so the test can drop one.
      const Native = window.WebSocket;
      window.__sockets = [];
      window.WebSocket = class extends Native {
        constructor(...args) {
          super(...args);
          window.__sockets.push(this);
        }
      };
    });
    await page.click('nav >> text=Terminal');
    await page.click('[data-testid="new-terminal"]');
    await page.locator('.xterm-rows').waitFor();
    await page.locator('.xterm').click();
    await page.waitForTimeout(300);
    await page.keyboard.type('echo hi\n');
    const hasHi = async () => (await page.locator('.xterm-rows').innerText()).split('\n').some((l) => l.trim() === 'hi');
    await until(hasHi, 'the shell to print hi');
    await shot(page, 'terminal');

    // A dropped connection resumes from its byte cursor: nothing lost, nothing twice.
    await page.locator('.tab.active[data-conn="connected"]').waitFor();
    await page.evaluate(() => window.__sockets.at(-1).close(4000, 'dropped by the test'));
    await until(async () => (await page.evaluate(() => window.__sockets.length)) === 2, 'a second WebSocket');
    await page.locator('.tab.active[data-conn="connected"]').waitFor();
    assert.match(await page.evaluate(() => window.__sockets[1].url), /cursor=\d+/);
    await page.keyboard.type('echo again\n');
    const lines = async () => (await page.locator('.xterm-rows').innerText()).split('\n').map((l) => l.trim());
    await until(async () => (await lines()).includes('again'), 'output after the reconnect');
    assert.equal((await lines()).filter((l) => l === 'hi').length, 1, 'output was replayed twice');

    await page.reload();
    await page.locator('.xterm-rows').waitFor();
    await until(hasHi, 'the replayed output after a reload');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('fills server-everything’s elicitation form, with an invalid value flagged first', async (t) => {
    await needs('/mcp', '/mcp/elicitation');
    const page = await loggedInPage(browser, server);
    await page.click('nav >> text=MCP');
    const form = page.locator('form.add-server');
    await form.locator('input').first().fill('everything');
    await form.locator('input.mono').fill(`node ${everything} stdio`);
    await form.locator('button[type="submit"]').click();
    await page.locator('[data-testid="mcp-server"][data-name="everything"] [data-testid="mcp-status"]', { hasText: 'connected' }).waitFor({ timeout: 20000 });
    await shot(page, 'mcp');

    await page.click('nav >> text=Sessions');
    await prompt(page, 'mcp: everything trigger-elicitation-request {}');
    // Calling an MCP tool asks for permission first.
    const perm = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
    const form2 = page.locator('[data-testid="pending-dialog"][data-kind="elicitation"]');
    await Promise.race([perm.waitFor(), form2.waitFor()]);
    if (await perm.count()) await perm.locator('[data-testid="approve-once"]').click();
    await form2.waitFor();
    await form2.locator('[data-field="name"] input').fill('Ada Lovelace');
    await form2.locator('[data-field="email"] input').fill('not-an-email');
    const err = form2.locator('[data-field="email"] .field-error');
    await err.waitFor();
    await form2.locator('[data-testid="elicit-accept"]').click();
    assert.equal((await rest(server, 'GET', '/mcp/elicitation')).data.length, 1, 'an invalid form was sent');
    await shot(page, 'elicitation-invalid');
    await form2.locator('[data-field="email"] input').fill('ada@example.com');
    await err.waitFor({ state: 'detached' });
    await form2.locator('[data-testid="elicit-accept"]').click();
    await form2.waitFor({ state: 'detached' });
    const tool = page.locator('[data-testid="tool"][data-status="completed"]', { hasText: 'elicitation' });
    await tool.waitFor({ timeout: 15000 });
    await tool.locator('.tool-head').click();
    await until(async () => /Ada Lovelace/.test(await page.locator('[data-testid="conversation"]').innerText()), 'the tool result to carry the answer');
    await shot(page, 'elicitation-done');

    // A URL request shows the full URL and its domain and opens nothing by itself.
    const popups = [];
    page.context().on('page', (p) => popups.push(p.url()));
    await page.fill('[data-testid="composer-input"]', 'mcp: everything trigger-url-elicitation {"url":"https://login.example.com/authorize?client=tandem&state=42"}');
    await page.press('[data-testid="composer-input"]', 'Enter');
    const urlDialog = page.locator('[data-testid="pending-dialog"][data-kind="elicitation"]');
    await Promise.race([perm.waitFor(), urlDialog.waitFor()]);
    if (await perm.count()) await perm.locator('[data-testid="approve-once"]').click();
    await urlDialog.locator('[data-testid="url-domain"]').waitFor();
    assert.equal(await urlDialog.locator('[data-testid="url-domain"]').innerText(), 'login.example.com');
    assert.equal(await urlDialog.locator('[data-testid="url-full"]').innerText(), 'https://login.example.com/authorize?client=tandem&state=42');
    await shot(page, 'elicitation-url');
    await urlDialog.locator('button', { hasText: 'Decline' }).click();
    await urlDialog.waitFor({ state: 'detached' });
    assert.deepEqual(popups, [], 'a page was opened without a click on Open');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('shows the pending panel usably on a 390-px-wide screen', async () => {
    const page = await loggedInPage(browser, server, { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    // One pane at a time: the list first, then the new session.
    await clickNewSession(page);
    await prompt(page, 'run: echo narrow && printf "%s\\n" one two three');
    const dialog = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
    await dialog.waitFor();
    const box = await dialog.boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= 390, `the dialog sticks out: ${JSON.stringify(box)}`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(overflow <= 390, `the page scrolls sideways: ${overflow}px`);
    const approve = await dialog.locator('[data-testid="approve-once"]').boundingBox();
    assert.ok(approve.x + approve.width <= 390 && approve.height >= 28, `approve is not reachable: ${JSON.stringify(approve)}`);
    await shot(page, 'pending-narrow');
    await dialog.locator('[data-testid="reject"]').click();
    await dialog.waitFor({ state: 'detached' });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('shows the connection going down when the server stops', async () => {
    const page = await loggedInPage(browser, server);
    await server.stop();
    await page.locator('[data-testid="conn"]:not([data-state="live"])').waitFor();
    await shot(page, 'disconnected');
    await page.context().close();
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
