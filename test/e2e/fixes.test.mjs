// Browser end-to-end tests for the web UI problems reported in issue 20: each
// scenario is what a person did when the UI misbehaved.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { missing, startTandem, launchBrowser, loggedInPage, rest, until, everything } from './harness.mjs';

const why = missing();

async function prompt(page, text) {
  await page.fill('[data-testid="composer-input"]', text);
  await page.press('[data-testid="composer-input"]', 'Enter');
  await page.waitForURL(/#\/session\/ses_/);
}

describe('the fixes of issue 20', { skip: why || false }, () => {
  let browser;

  before(async () => {
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
  });

  test('with an OpenAI key set, the composer preselects the server’s default model, not the demo', async () => {
    // The key is never used: nothing is sent, the test only reads what the composer picked.
    const server = await startTandem({ env: { OPENAI_API_KEY: 'sk-e2e-not-a-real-key' } });
    try {
      const page = await loggedInPage(browser, server);
      const model = page.locator('select[aria-label="Model"]');
      await until(async () => (await model.inputValue()) !== '', 'the model picker to be filled');
      assert.equal(await model.inputValue(), 'openai/gpt-4.1');
      assert.deepEqual(page.errors, []);
      await page.context().close();
    } finally {
      await server.stop();
    }
  });

  describe('with the demo model', () => {
    let server;
    before(async () => {
      server = await startTandem();
    });
    after(async () => {
      await server?.stop();
    });

    test('a completed tool card does not claim to wait for another session’s approval', async () => {
      const page = await loggedInPage(browser, server);
      await prompt(page, 'run: echo first');
      const first = page.url().split('/session/')[1];
      const dialog = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
      await dialog.waitFor();
      await dialog.locator('[data-testid="approve-once"]').click();
      await dialog.waitFor({ state: 'detached' });
      const done = page.locator('[data-testid="tool"][data-tool="bash"][data-status="completed"]');
      await done.waitFor();

      // Another session asks for approval of its own call, which has the same callID.
      const other = (await rest(server, 'POST', '/session', {})).data;
      const sent = await rest(server, 'POST', `/session/${other.id}/prompt_async`, { parts: [{ type: 'text', text: 'run: echo second' }] });
      assert.ok(sent.status < 300, JSON.stringify(sent.data));
      const asked = await until(async () => (await rest(server, 'GET', '/permission')).data.find((p) => p.sessionID === other.id), 'the second session’s permission');
      try {
        await until(async () => (await page.locator('[data-testid="pending-count"]').innerText()) === '1', 'the UI to see the request');
        assert.equal(page.url().split('/session/')[1], first);
        assert.equal(await done.locator('button.waiting').count(), 0, `the finished card of ${first} waits for ${asked.id} of ${other.id}`);

        // The card of the session that does wait still says so.
        await page.goto(`${server.base}/#/session/${other.id}`);
        await page.locator('[data-testid="tool"][data-tool="bash"] button.waiting').waitFor();
      } finally {
        await rest(server, 'POST', `/permission/${asked.id}/reply`, { reply: 'reject' });
      }
      assert.deepEqual(page.errors, []);
      await page.context().close();
    });

    test('a reload in the middle of a turn shows the text streamed so far, then the rest', async () => {
      const words = Array.from({ length: 30 }, (_, i) => `w${i + 1}`);
      const page = await loggedInPage(browser, server);
      await prompt(page, `slow: ${words.join(' ')}`);
      const sid = page.url().split('/session/')[1];
      // Reads what is on screen now (innerText would wait for a text part to appear).
      const said = async () => (await page.locator('[data-testid="msg-assistant"] .md').allInnerTexts()).at(-1) || '';
      await until(async () => /\bw4\b/.test(await said()), 'the first words');
      await page.reload();
      await page.locator('[data-testid="conn"][data-state="live"]').waitFor();
      try {
        // Before the turn ends (30 words take 9 s), the words already streamed are back on screen.
        await until(async () => /\bw4\b/.test(await said()), 'the streamed words after the reload', 3000);
        assert.equal((await rest(server, 'GET', '/session/status')).data[sid]?.type, 'busy', 'the turn ended before the check');
        // The words that follow are added to them, none twice.
        await until(async () => /\bw12\b/.test(await said()), 'more words after the reload');
        const seen = (await said()).split(/\s+/).filter(Boolean);
        assert.deepEqual(seen, words.slice(0, seen.length), 'words lost or repeated');
      } finally {
        await rest(server, 'POST', `/session/${sid}/abort`, {});
      }
      assert.deepEqual(page.errors, []);
      await page.context().close();
    });

    describe('server-everything’s elicitation form', () => {
      const schema = JSON.parse(readFileSync(new URL('./testdata/everything-elicitation-schema.json', import.meta.url)));
      let page;

      before(async () => {
        const added = await rest(server, 'POST', '/mcp', { name: 'everything', config: { type: 'local', command: ['node', everything, 'stdio'] } });
        assert.equal(added.status, 200, JSON.stringify(added.data));
        await until(async () => (await rest(server, 'GET', '/mcp')).data.everything?.status === 'connected', 'server-everything to connect', 20000);
      });

      after(async () => {
        await page?.context().close();
      });

      async function openForm() {
        page = await loggedInPage(browser, server);
        await prompt(page, 'mcp: everything trigger-elicitation-request {}');
        const perm = page.locator('[data-testid="pending-dialog"][data-kind="permission"]');
        const form = page.locator('[data-testid="pending-dialog"][data-kind="elicitation"]');
        await Promise.race([perm.waitFor(), form.waitFor()]);
        if (await perm.count()) await perm.locator('[data-testid="approve-once"]').click();
        await form.locator('[data-field="name"]').waitFor();
        return form;
      }

      test('lists its fields in the order the MCP server sent them, over REST and on screen', async () => {
        const form = await openForm();
        const want = Object.keys(schema.properties);
        const pending = (await rest(server, 'GET', '/mcp/elicitation')).data;
        assert.equal(pending.length, 1);
        assert.deepEqual(Object.keys(pending[0].requestedSchema.properties), want);
        const shown = await form.locator('[data-field]').evaluateAll((els) => els.map((e) => e.getAttribute('data-field')));
        assert.deepEqual(shown, want);
      });

      test('unticking the only ticked choice sends an empty choice, which the form flags until one is ticked', async () => {
        const form = page.locator('[data-testid="pending-dialog"][data-kind="elicitation"]');
        await form.locator('[data-field="name"] input').fill('Ada Lovelace');
        const multi = form.locator('[data-field="untitledMultipleSelectEnum"]');
        const guitar = multi.locator('input[value="Guitar"]');
        assert.equal(await guitar.isChecked(), true, 'Guitar is the default');
        await guitar.uncheck();
        await form.locator('[data-testid="elicit-accept"]').click();
        await multi.locator('.field-error').waitFor();
        assert.match(await multi.locator('.field-error').innerText(), /at least 1/);
        assert.equal((await rest(server, 'GET', '/mcp/elicitation')).data.length, 1, 'the form was sent with the default put back');

        await multi.locator('input[value="Piano"]').check();
        await multi.locator('.field-error').waitFor({ state: 'detached' });
        await form.locator('[data-testid="elicit-accept"]').click();
        await form.waitFor({ state: 'detached' });
        const tool = page.locator('[data-testid="tool"][data-status="completed"]', { hasText: 'elicitation' });
        await tool.waitFor({ timeout: 15000 });
        await tool.locator('.tool-head').click();
        const text = await until(async () => {
          const t = await tool.innerText();
          return /Piano/.test(t) && t;
        }, 'the tool result to carry the answer');
        assert.doesNotMatch(text, /Guitar/, 'the unticked default came back');
        assert.deepEqual(page.errors, []);
      });
    });
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
