// Retry, Copy and Edit in the conversation: Retry reverts to the last prompt and sends it again,
// Copy puts a whole answer on the clipboard, Edit reverts to a prompt and resends it changed.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, rest, until } from './harness.mjs';

const why = missing();

async function messages(server, id) {
  const { data } = await rest(server, 'GET', `/session/${id}/message`);
  return data;
}
const userTexts = (msgs) => msgs.filter((m) => m.info.role === 'user').map((m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''));

describe('answers and prompts in the conversation', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  async function session(page, prompts) {
    const { data: s } = await rest(server, 'POST', '/session', {});
    for (const text of prompts) {
      const sent = await rest(server, 'POST', `/session/${s.id}/message`, { parts: [{ type: 'text', text }] });
      assert.equal(sent.status, 200);
    }
    await page.goto(`${server.base}/#/session/${s.id}`);
    await until(async () => (await page.locator('[data-testid="msg-assistant"]').count()) === prompts.length, 'the answers');
    return s.id;
  }

  test('Retry sends the last prompt again in place of its answer', async () => {
    const page = await loggedInPage(browser, server);
    const id = await session(page, ['first question', 'second question']);
    const before = await messages(server, id);
    const oldAnswer = before.at(-1).info.id;
    assert.equal(await page.locator('[data-testid="retry"]').count(), 1, 'Retry only on the last answer');
    await page.click('[data-testid="retry"]');
    await until(async () => {
      const now = await messages(server, id);
      return now.length === 4 && now.at(-1).info.role === 'assistant' && now.at(-1).info.id !== oldAnswer && now.at(-1).info.time.completed;
    }, 'a new answer in place of the old one');
    const after = await messages(server, id);
    assert.deepEqual(userTexts(after), ['first question', 'second question']);
    await until(async () => (await page.locator('[data-testid="msg-assistant"]').count()) === 2, 'two answers on the page');
    assert.equal(await page.locator('[data-testid="revert-notice"]').count(), 0);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('Copy puts the whole answer on the clipboard', async () => {
    const page = await loggedInPage(browser, server, { permissions: ['clipboard-read', 'clipboard-write'] });
    await session(page, ['copy me please']);
    await page.click('[data-testid="copy-answer"]');
    await until(async () => (await page.textContent('[data-testid="copy-answer"]')) === 'Copied', 'Copied');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(copied, 'You said: copy me please');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('Edit reverts to a prompt, puts it in the composer, and the changed prompt replaces it', async () => {
    const page = await loggedInPage(browser, server);
    const id = await session(page, ['keep this one', 'tpyo in this one']);
    await page.locator('[data-testid="msg-user"]').nth(1).locator('[data-testid="edit-prompt"]').click();
    const input = page.locator('[data-testid="composer-input"]');
    await until(async () => (await input.inputValue()) === 'tpyo in this one', 'the prompt in the composer');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'composer-input');
    await page.waitForSelector('[data-testid="revert-notice"]');
    assert.equal(await page.locator('[data-testid="msg-user"]').count(), 1, 'the edited prompt and its answer hide');
    await input.fill('typo fixed in this one');
    await page.click('[data-testid="send"]');
    await until(async () => {
      const now = await messages(server, id);
      return now.length === 4 && now.at(-1).info.time.completed;
    }, 'the edited prompt answered');
    assert.deepEqual(userTexts(await messages(server, id)), ['keep this one', 'typo fixed in this one']);
    await until(async () => /You said: typo fixed in this one/.test(await page.textContent('[data-testid="conversation"]')), 'the new answer shown');
    assert.doesNotMatch(await page.textContent('[data-testid="conversation"]'), /tpyo/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
