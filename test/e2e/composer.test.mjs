// The composer's helpers: "/" opens the commands menu and runs the chosen command (so /compact is
// never sent to the model as text), "@" completes the project's files and sends them as file parts,
// a pasted or dropped image becomes an attachment, and a long paste collapses to a chip that expands.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { missing, launchBrowser, startTandem, loggedInPage, rest, until } from './harness.mjs';
import { startLLM } from './llmserver.mjs';

const why = missing();
const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

async function messages(server, id) {
  return (await rest(server, 'GET', `/session/${id}/message`)).data;
}
const textOf = (m) => m.parts.filter((p) => p.type === 'text' && !p.synthetic).map((p) => p.text).join('');

describe('the composer', { skip: why || false }, () => {
  let browser, server, llm;
  before(async () => {
    llm = await startLLM({ reply: 'I see a tiny image.' });
    browser = await launchBrowser();
    server = await startTandem();
    mkdirSync(path.join(server.project, '.tandem', 'command'), { recursive: true });
    writeFileSync(path.join(server.project, '.tandem', 'command', 'greet.md'), '---\ndescription: Greets someone\n---\nSay hello to $ARGUMENTS\n');
  });
  after(async () => {
    await server?.stop();
    await browser?.close();
    await llm?.close();
  });

  async function openSession(page, prompts = []) {
    const { data: s } = await rest(server, 'POST', '/session', {});
    for (const text of prompts) assert.equal((await rest(server, 'POST', `/session/${s.id}/message`, { parts: [{ type: 'text', text }] })).status, 200);
    await page.goto(`${server.base}/#/session/${s.id}`);
    await page.waitForSelector('[data-testid="composer-input"]');
    if (prompts.length) await page.waitForSelector('[data-testid="msg-assistant"]');
    return s.id;
  }

  test('"/" lists the commands; /compact compacts instead of reaching the model, and a project command runs with its arguments', async () => {
    const page = await loggedInPage(browser, server);
    const id = await openSession(page, ['plan the schema']);
    const input = page.locator('[data-testid="composer-input"]');
    await input.click();
    await input.pressSequentially('/');
    const menu = page.locator('[data-testid="command-menu"]');
    await menu.waitFor();
    const names = await menu.locator('li code').allTextContents();
    for (const n of ['/compact', '/init', '/review', '/greet']) assert.ok(names.includes(n), `${n} in ${names}`);
    await input.pressSequentially('comp');
    await input.press('Enter');
    await page.waitForSelector('[data-testid="compaction"]');
    let msgs = await messages(server, id);
    assert.ok(!msgs.some((m) => /\/compact/.test(textOf(m))), 'no message carries /compact as text');

    await input.click();
    await input.pressSequentially('/gre');
    await menu.waitFor();
    await input.press('Enter');
    await until(async () => (await input.inputValue()) === '/greet ', 'the command waiting for its arguments');
    await input.pressSequentially('world');
    await input.press('Enter');
    await until(async () => /You said: Say hello to world/.test(await page.textContent('[data-testid="conversation"]')), 'the command’s answer');
    msgs = await messages(server, id);
    assert.ok(msgs.some((m) => m.info.role === 'user' && textOf(m) === 'Say hello to world'), 'the template was expanded by the server');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('"@" completes a project file, which is sent as a file part', async () => {
    const page = await loggedInPage(browser, server);
    const id = await openSession(page);
    const input = page.locator('[data-testid="composer-input"]');
    await input.click();
    await input.pressSequentially('summarise @READ');
    const menu = page.locator('[data-testid="file-menu"]');
    await menu.waitFor();
    assert.deepEqual(await menu.locator('li').allTextContents(), ['README.md']);
    await input.press('Enter');
    assert.equal(await input.inputValue(), 'summarise @README.md ');
    await input.press('Enter');
    await until(async () => (await messages(server, id)).some((m) => m.info.role === 'user'), 'the prompt stored');
    const user = (await messages(server, id)).find((m) => m.info.role === 'user');
    const file = user.parts.find((p) => p.type === 'file');
    assert.ok(file, 'a file part');
    assert.equal(file.filename, 'README.md');
    assert.equal(file.url, `file://${path.join(server.project, 'README.md')}`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a pasted image becomes an attachment sent as a data: URL file part; a dropped one too', async () => {
    const patched = await rest(server, 'PATCH', '/global/config', {
      provider: { loop: { name: 'Loop', npm: '@ai-sdk/openai-compatible', options: { baseURL: llm.base }, models: { vision: { attachment: true } } } },
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.data));
    const page = await loggedInPage(browser, server);
    const id = await openSession(page);
    await page.locator('select[aria-label="Model"]').selectOption('loop/vision');
    const input = page.locator('[data-testid="composer-input"]');
    await input.click();
    const dispatch = (type) =>
      page.evaluate(
        ([b64, type]) => {
          const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
          const dt = new DataTransfer();
          dt.items.add(new File([bytes], 'dot.png', { type: 'image/png' }));
          const target = type === 'paste' ? document.querySelector('[data-testid="composer-input"]') : document.querySelector('form.composer');
          const ev = type === 'paste' ? new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }) : new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true });
          target.dispatchEvent(ev);
        },
        [png, type],
      );
    await dispatch('paste');
    await until(async () => (await page.locator('[data-testid="attachment"]').count()) === 1, 'the pasted image’s chip');
    await dispatch('drop');
    await until(async () => (await page.locator('[data-testid="attachment"]').count()) === 2, 'the dropped image’s chip');
    await page.locator('[data-testid="attachment"]').nth(1).getByRole('button').click();
    await until(async () => (await page.locator('[data-testid="attachment"]').count()) === 1, 'one chip removed');
    await input.fill('what is this?');
    await input.press('Enter');
    await until(async () => /I see a tiny image/.test(await page.textContent('[data-testid="conversation"]')), 'the answer');
    const user = (await messages(server, id)).find((m) => m.info.role === 'user');
    const files = user.parts.filter((p) => p.type === 'file');
    assert.equal(files.length, 1);
    assert.equal(files[0].mime, 'image/png');
    assert.equal(files[0].url, `data:image/png;base64,${png}`);
    // The title is asked of the model too, concurrently: look at every request, not the last one.
    const sent = llm.prompts().map((p) => JSON.stringify(p.body.messages));
    assert.ok(sent.some((m) => m.includes(`data:image/png;base64,${png}`)), 'the model received the image');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a long paste collapses to a chip that expands, and is sent whole', async () => {
    const page = await loggedInPage(browser, server);
    const id = await openSession(page);
    await page.locator('select[aria-label="Model"]').selectOption('demo/demo');
    const input = page.locator('[data-testid="composer-input"]');
    await input.click();
    await input.pressSequentially('look at this: ');
    const long = Array.from({ length: 150 }, (_, i) => `line ${i} of the pasted log`).join('\n');
    assert.ok(long.length > 2000);
    await page.evaluate((text) => {
      const dt = new DataTransfer();
      dt.setData('text/plain', text);
      document.querySelector('[data-testid="composer-input"]').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }, long);
    await until(async () => /\[Pasted text #1, [\d,]+ characters\]$/.test(await input.inputValue()), 'the paste’s label in the box');
    assert.ok((await input.inputValue()).length < 100, 'the box does not hold the paste');
    const chip = page.locator('[data-testid="paste-chip"] button');
    assert.match(await chip.textContent(), /Pasted text #1 · [\d,]+ characters/);
    await chip.click();
    assert.equal(await page.textContent('[data-testid="paste-preview"]'), long);
    await input.press('Enter');
    await until(async () => (await messages(server, id)).some((m) => m.info.role === 'user'), 'the prompt stored');
    const user = (await messages(server, id)).find((m) => m.info.role === 'user');
    assert.equal(textOf(user), 'look at this: ' + long);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
