// OpenCode's terminal UI compacting a session on tandem: `/compact` calls tandem's
// POST /session/{id}/summarize, the demo model's summary appears on the screen, and the next prompt
// still gets its answer.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTandem, user, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

describe("OpenCode's terminal UI compacts a session on tandem", { skip: tuiUnavailable() }, () => {
  let server;
  let client;
  let term;

  before(async () => {
    server = await startTandem();
    client = server.client();
    term = new Terminal('compact');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    await server?.stop();
  });

  async function theSession() {
    const sessions = (await client.session.list()).data;
    assert.equal(sessions.length, 1, `expected the TUI's one session, got ${JSON.stringify(sessions.map((s) => s.id))}`);
    return sessions[0].id;
  }

  test('/compact shows the demo model\'s summary of the prompts so far', async () => {
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    await term.waitFor('the prompt', /Ask anything/, 90000);
    await term.type('remember the walrus');
    await term.waitFor('the first reply', /You said: remember the walrus/);
    await term.type('/compact');
    const screen = await term.waitFor('the summary', /The user asked: remember the walrus/);
    assert.match(screen, /─ Compaction ─/, 'the TUI draws its compaction divider for the compaction part');
    assert.doesNotMatch(screen, /Error|NotFound|404/);
    const sessionID = await theSession();
    await waitFor('the summary to be stored', async () => {
      const messages = (await client.session.messages({ sessionID })).data;
      const last = messages.at(-1);
      return last?.info.role === 'assistant' && last.info.summary === true && last.info.time.completed;
    });
  });

  test('the next prompt after /compact still gets its answer', async () => {
    await sleep(300);
    await term.type('and the carpenter');
    await term.waitFor('the reply after the summary', /You said: and the carpenter/);
    const sessionID = await theSession();
    const messages = (await client.session.messages({ sessionID })).data;
    assert.deepEqual(messages.map((m) => m.info.role), ['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    assert.ok(messages[2].parts.some((p) => p.type === 'compaction'), 'the /compact user message holds a compaction part');
  });
});
