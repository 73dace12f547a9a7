// The model picker remembers each session's model: from the session's last prompt, on every
// device, and a pick not yet sent survives a reload; a new session starts with the server default.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { missing, launchBrowser, startTandem, loggedInPage, rest, until, clickNewSession } from './harness.mjs';
import { startLLM } from './llmserver.mjs';

const why = missing();

describe('the model picker', { skip: why || false }, () => {
  let browser, server, llm;
  before(async () => {
    llm = await startLLM({ reply: 'Answered by the loopback model.' });
    browser = await launchBrowser();
    server = await startTandem({ env: { OPENAI_API_KEY: 'sk-e2e-loopback', OPENAI_BASE_URL: llm.base } });
  });
  after(async () => {
    await server?.stop();
    await browser?.close();
    await llm?.close();
  });

  const picker = (page) => page.locator('select[aria-label="Model"]');

  test('keeps a session’s model across a reload and another device, and a new session starts with the default', async () => {
    const { data: session } = await rest(server, 'POST', '/session', {});
    const page = await loggedInPage(browser, server);
    await page.goto(`${server.base}/#/session/${session.id}`);
    await until(async () => (await picker(page).inputValue()) === 'openai/gpt-4.1', 'the server default in the picker');

    await picker(page).selectOption('openai/gpt-4o-mini');
    await page.reload();
    await page.waitForSelector('[data-testid="conn"][data-state="live"]');
    await until(async () => (await picker(page).inputValue()) === 'openai/gpt-4o-mini', 'the picked model after a reload');

    await page.fill('[data-testid="composer-input"]', 'which model are you?');
    await page.click('[data-testid="send"]');
    await until(async () => /Answered by the loopback model/.test(await page.textContent('[data-testid="conversation"]')), 'the answer');
    const { data: msgs } = await rest(server, 'GET', `/session/${session.id}/message`);
    const user = msgs.find((m) => m.info.role === 'user');
    assert.deepEqual([user.info.model.providerID, user.info.model.modelID], ['openai', 'gpt-4o-mini']);
    assert.ok(llm.prompts().some((r) => r.body.model === 'gpt-4o-mini'), 'the loopback server was asked with gpt-4o-mini');

    // Another device (a fresh browser context, nothing in its storage) reads it from the last prompt.
    const other = await loggedInPage(browser, server);
    await other.goto(`${server.base}/#/session/${session.id}`);
    await until(async () => (await picker(other).inputValue()) === 'openai/gpt-4o-mini', 'the session’s model on another device');
    await other.context().close();

    // A new session starts with the server's default again.
    await clickNewSession(page);
    await until(async () => page.url().includes('/session/') && !page.url().includes(session.id), 'the new session');
    await until(async () => (await picker(page).inputValue()) === 'openai/gpt-4.1', 'the default in a new session');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
