// A compacted session in the browser UI: the compaction shows as a divider saying that the model
// now sees the summary below it, and the demo model's summary follows.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, shot, rest, until } from './harness.mjs';

const why = missing();

describe('a compacted session', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('shows the compaction divider and the summary, and live when it happens', async () => {
    const { data: session } = await rest(server, 'POST', '/session', {});
    const sent = await rest(server, 'POST', `/session/${session.id}/message`, { parts: [{ type: 'text', text: 'plan the schema' }] });
    assert.equal(sent.status, 200);

    const page = await loggedInPage(browser, server);
    await page.goto(`${server.base}/#/session/${session.id}`);
    await page.waitForSelector('[data-testid="msg-assistant"]');
    assert.equal(await page.locator('[data-testid="compaction"]').count(), 0);

    // Compacted by another client while the page is open: the divider and summary arrive live.
    const summarized = await rest(server, 'POST', `/session/${session.id}/summarize`, { providerID: 'demo', modelID: 'demo' });
    assert.equal(summarized.status, 200);
    await until(async () => (await page.locator('[data-testid="compaction"]').count()) === 1, 'the compaction divider');
    const divider = page.locator('[data-testid="compaction"]');
    assert.equal(await divider.getAttribute('data-auto'), 'false');
    assert.match(await divider.textContent(), /Compacted: the model now sees the summary below instead of the messages above/);
    await until(
      async () => /Summary of the conversation so far:[\s\S]*The user asked: plan the schema/.test(await page.textContent('[data-testid="conversation"]')),
      'the summary',
    );
    assert.equal(await page.locator('[data-testid="msg-user"]').count(), 1, 'the compaction is no empty user bubble');
    await shot(page, 'compaction');
    assert.deepEqual(page.errors, []);
  });
});
