// Issue 30 item 7, measured in Chromium: a 300 KB paste, a session holding a 6 MB paste, and
// sessions of 200 and 1,000 messages. Each test prints what it measured (open time, long tasks,
// heights) for docs/web.md; the assertions are about what is rendered (a huge text shows its
// start, not a 59,000-px block), never about time: the waits only guard against a hang.
//
//   go build -o tandem ./cmd/tandem && cd test/e2e && npm ci && npm test -- big-sessions.test.mjs
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, rest, until } from './harness.mjs';

const why = missing();

// Long tasks (over 50 ms on the main thread) from the page's start, for the figures.
const observeLongTasks = () => {
  window.__long = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__long.push(Math.round(e.duration));
  }).observe({ type: 'longtask', buffered: true });
};

/** Opens a session from the session list and measures, in the page, until its last message shows. */
async function openTimed(page, server, sessionID, lastID) {
  await page.goto(`${server.base}/#/`);
  await page.waitForSelector('[data-testid="conn"][data-state="live"]');
  return page.evaluate(
    async ({ sid, last }) => {
      window.__long.length = 0;
      const t0 = performance.now();
      location.hash = `#/session/${sid}`;
      const deadline = t0 + 60000;
      while (!document.querySelector(`[data-id="${last}"]`)) {
        if (performance.now() > deadline) throw new Error('the session did not open within 60 s');
        await new Promise((r) => requestAnimationFrame(r));
      }
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))); // painted
      return { ms: Math.round(performance.now() - t0), longTasks: [...window.__long] };
    },
    { sid: sessionID, last: lastID },
  );
}

async function say(server, sessionID, text) {
  const sent = await rest(server, 'POST', `/session/${sessionID}/message`, { parts: [{ type: 'text', text }], model: { providerID: 'demo', modelID: 'demo' } });
  assert.equal(sent.status, 200, typeof sent.data === 'string' ? sent.data.slice(0, 200) : JSON.stringify(sent.data).slice(0, 200));
  return sent.data;
}

const figure = (what, v) => console.log(`# figure: ${what}: ${JSON.stringify(v)}`);

describe('big sessions in Chromium', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  test('a 300 KB paste and its 300 KB answer each show their start, not a 59,000-px block', async () => {
    const { data: s } = await rest(server, 'POST', '/session', {});
    const paste = ('a log line that goes on and on, ' + 'x'.repeat(60) + '\n').repeat(3300) + 'THE END';
    assert.ok(paste.length > 300000);
    const answer = await say(server, s.id, paste); // the demo model answers "You said: " and the paste
    const page = await loggedInPage(browser, server, {}, observeLongTasks);
    const opened = await openTimed(page, server, s.id, answer.info.id);
    const user = page.locator('[data-testid="msg-user"] .bubble');
    const assistant = page.locator('[data-testid="msg-assistant"]');
    const heights = { prompt: Math.round((await user.boundingBox()).height), answer: Math.round((await assistant.boundingBox()).height) };
    figure('300 KB paste', { ...opened, heights });
    assert.ok(heights.prompt < 2000, `the prompt is ${heights.prompt}px tall`);
    assert.ok(heights.answer < 2000, `the answer is ${heights.answer}px tall`);
    assert.doesNotMatch(await assistant.innerText(), /THE END/);
    // The whole answer is a click away, and Copy still copies all of it.
    await assistant.locator('[data-testid="long-toggle"]').click();
    await until(async () => /THE END/.test(await assistant.innerText()), 'the whole answer', 30000);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a session holding a 6 MB paste opens with its start shown', async () => {
    const { data: s } = await rest(server, 'POST', '/session', {});
    const paste = ('0123456789abcdef'.repeat(6) + '\n').repeat(63000) + 'THE END';
    assert.ok(paste.length > 6_000_000);
    const answer = await say(server, s.id, paste);
    const page = await loggedInPage(browser, server, {}, observeLongTasks);
    const opened = await openTimed(page, server, s.id, answer.info.id);
    const assistant = page.locator('[data-testid="msg-assistant"]');
    figure('6 MB paste session', { ...opened, answerHeight: Math.round((await assistant.boundingBox()).height) });
    assert.doesNotMatch(await assistant.innerText(), /THE END/);
    assert.ok((await assistant.boundingBox()).height < 2000);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('sessions of 200 and 1,000 messages open with a window of the last ones', async () => {
    const { data: s } = await rest(server, 'POST', '/session', {});
    let last;
    const sizes = {};
    for (let i = 0; i < 500; i++) {
      // Answers of a realistic shape: a paragraph and a code block, so Markdown has work to do.
      last = await say(server, s.id, `note ${i}: what does this do?\n\n\`\`\`js\nconst x${i} = [1, 2, 3].map((n) => n * ${i});\n\`\`\`\n`);
      if (i === 99 || i === 499) {
        const page = await loggedInPage(browser, server, {}, observeLongTasks);
        const opened = await openTimed(page, server, s.id, last.info.id);
        const rendered = await page.locator('[data-testid="msg-user"], [data-testid="msg-assistant"]').count();
        sizes[(i + 1) * 2] = { ...opened, rendered };
        assert.equal(rendered, Math.min(40, (i + 1) * 2));
        assert.deepEqual(page.errors, []);
        await page.context().close();
      }
    }
    figure('200-message session', sizes[200]);
    figure('1,000-message session', sizes[1000]);
  });
});
