// OpenCode's own terminal UI (`opencode attach URL -u tandem -p PASSWORD`, npm opencode-ai) run in
// tmux against the built tandem binary. The assertions read the screen with `tmux capture-pane`
// and check what a person would see; a few cross-checks ask tandem through the official SDK.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTandem, user, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

const occurrences = (text, word) => text.split(word).length - 1;

describe('OpenCode\'s terminal UI attached to tandem', { skip: tuiUnavailable() }, () => {
  let server;
  let client;
  let term;
  /** A second TUI, attached to the first one's session by the last test. */
  let second;

  before(async () => {
    server = await startTandem();
    client = server.client();
    term = new Terminal('attach');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    second?.stop();
    await server?.stop();
  });

  /** tandem's only session, the one the TUI created for its first prompt. */
  async function theSession() {
    const sessions = (await client.session.list()).data;
    assert.equal(sessions.length, 1, `expected the TUI's one session, got ${JSON.stringify(sessions.map((s) => s.id))}`);
    return sessions[0].id;
  }

  test('it starts, authenticated, showing the prompt and the demo model', async () => {
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    const screen = await term.waitFor('the prompt', /Ask anything/, 90000);
    assert.match(screen, /Build/, 'the build agent, from GET /agent');
    assert.match(screen, /Demo \(offline/, 'the demo model, from GET /config/providers');
    assert.doesNotMatch(screen, /Error|Unauthorized|401/);
  });

  test('a prompt streams the demo model\'s reply onto the screen', async () => {
    await term.type('hello from the terminal');
    const screen = await term.waitFor('the reply', /You said: hello from the terminal/);
    assert.match(screen, /Demo \(offline, scripted\)/);
    const sessionID = await theSession();
    const messages = (await client.session.messages({ sessionID })).data;
    assert.deepEqual(messages.map((m) => m.info.role), ['user', 'assistant']);
  });

  test('a run: prompt shows the permission dialog, and approving it runs the command', async () => {
    // The shell computes 6*7, so "approved-42" can only be on screen if the command really ran.
    await term.type('run: echo approved-$((6*7))');
    const dialog = await term.waitFor('the permission dialog', /Permission required/);
    assert.match(dialog, /Allow once/);
    assert.match(dialog, /Reject/);
    assert.match(dialog, /echo approved-\$\(\(6\*7\)\)/);
    assert.doesNotMatch(dialog, /approved-42/);
    const pending = (await client.permission.list()).data;
    assert.equal(pending.length, 1, 'tandem holds the request the dialog shows');

    term.press('Enter'); // "Allow once" is selected
    const screen = await term.waitFor('the command output', /approved-42/);
    assert.doesNotMatch(screen, /Permission required/);
    await waitFor('the permission to be answered', async () => (await client.permission.list()).data.length === 0);
  });

  test('a redirection shows one permission dialog, and approving it runs the command and writes the file', async () => {
    // tandem used to ask a second time for the write, which OpenCode's dialog showed as "No diff provided".
    const file = path.join(server.project, 'tui-redirect.txt');
    await term.type('run: echo tui-v2 > tui-redirect.txt');
    const dialog = await term.waitFor('the permission dialog', /Permission required[^]*echo tui-v2/);
    assert.doesNotMatch(dialog, /No diff provided/);
    term.press('Enter'); // "Allow once"
    await waitFor('the file to be written', () => existsSync(file) && readFileSync(file, 'utf8') === 'tui-v2\n');
    await waitFor('the permission to be answered', async () => (await client.permission.list()).data.length === 0);
    const screen = await term.waitFor('the finished turn', /echo tui-v2 > tui-redirect\.txt[\s\S]*Demo \(offline, scripted\) · [\d.]+m?s/, 30000);
    assert.doesNotMatch(screen, /Permission required|No diff provided/, 'no second dialog for the write');
    rmSync(file);
  });

  test('a long command (seq 1 5000) shows its last line and the session returns to idle, five times over', async () => {
    // A thousand output updates in a few milliseconds once cut the TUI's event stream and left it
    // "busy" with the output cut short; streaming updates are now coalesced and a healthy reader
    // is never dropped for a burst.
    const sessionID = await theSession();
    for (let i = 1; i <= 5; i++) {
      await term.type(`run: seq 1 5000; echo burst-done-${i}`);
      await term.waitFor(`the permission dialog (run ${i})`, /Permission required/);
      term.press('Enter');
      const done = new RegExp(`5000\\s+burst-done-${i}[\\s\\S]*Demo \\(offline, scripted\\) · [\\d.]+m?s`);
      const screen = await term.waitFor(`the last line and the finished turn (run ${i})`, done, 30000);
      assert.doesNotMatch(screen, /Permission required/);
      const status = (await client.session.status()).data;
      assert.equal(status[sessionID]?.type ?? 'idle', 'idle', `run ${i}: tandem says the session is ${JSON.stringify(status[sessionID])}`);
    }
  });

  test('a running command\'s output shows while it runs, then the rest once it ends', async () => {
    // tandem streams the output as deltas on state.metadata.output, which OpenCode's TUI does not
    // apply (it appends deltas to a part's top-level fields): it shows the whole running part that
    // follows them within a second. The command waits for a file only the test creates.
    const release = path.join(server.project, 'tui-release');
    await term.type('run: echo tui-live-first; until [ -f tui-release ]; do sleep 0.05; done; echo tui-live-second');
    await term.waitFor('the permission dialog', /Permission required[^]*tui-live-first/);
    term.press('Enter');
    const live = await term.waitFor('the first line while the command runs', /^[\s┃]*tui-live-first\s*$/m, 30000);
    assert.doesNotMatch(live, /^[\s┃]*tui-live-second\s*$/m);
    writeFileSync(release, '');
    await term.waitFor('the second line once it ends', /^[\s┃]*tui-live-second\s*$/m, 30000);
    rmSync(release);
  });

  test('an ask: prompt shows the question dialog, and choosing an option completes it', async () => {
    await term.type('ask: Which color do you prefer? | Red | Blue');
    const dialog = await term.waitFor('the question dialog', /2\. Blue/);
    assert.match(dialog, /Which color do you prefer\?/);
    assert.match(dialog, /1\. Red/);

    term.press('Down');
    await sleep(300);
    term.press('Enter');
    await term.waitFor('the answered question', /"Which color do you prefer\?"="Blue"/);
    await waitFor('the question to be answered', async () => (await client.question.list()).data.length === 0);
  });

  test('rejecting a permission fails the tool call without running the command', async () => {
    await term.type('run: echo rejected-$((6*7))');
    await term.waitFor('the permission dialog', /Permission required[^]*echo rejected-/);
    term.press('Right');
    term.press('Right');
    await sleep(300);
    term.press('Enter'); // "Reject"
    const screen = await term.waitFor('the rejected tool', /rejected permission to use this specific tool call/);
    assert.doesNotMatch(screen, /rejected-42/, 'the command never ran');
    assert.doesNotMatch(screen, /Permission required/);
  });

  test('a typed answer of its own answers the question', async () => {
    await term.type('ask: Which editor? | Vim | Emacs');
    const dialog = await term.waitFor('the question dialog', /3\. Type your own answer/);
    assert.match(dialog, /1\. Vim/);
    term.press('Down');
    term.press('Down');
    await sleep(300);
    term.press('Enter');
    await sleep(300);
    await term.type('Helix');
    await term.waitFor('the typed answer', /"Which editor\?"="Helix"/);
  });

  test('Esc dismisses a question and the turn ends', async () => {
    await term.type('ask: Ship it? | Yes | No');
    await term.waitFor('the question dialog', /2\. No/);
    term.press('Escape');
    const screen = await term.waitFor('the dialog to close', /^(?![^]*esc dismiss)/);
    assert.doesNotMatch(screen, /1\. Yes/);
    await waitFor('the question to be dismissed', async () => (await client.question.list()).data.length === 0);
    const sessionID = await theSession();
    const last = (await client.session.messages({ sessionID })).data.at(-1);
    const tool = last.parts.find((p) => p.type === 'tool');
    assert.equal(tool.state.status, 'error');
    assert.match(tool.state.error, /dismissed/);
  });

  test('Esc Esc aborts a slow turn, which stops streaming', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `tick${String(i + 1).padStart(2, '0')}`);
    await term.type(`slow: ${words.join(' ')}`);
    // Every word is on screen once in the prompt; a second tick03 is the reply streaming it.
    await term.waitFor('the slow reply to start streaming', /tick03[^]*tick03/, 20000);
    await term.waitFor('the busy footer', /esc interrupt/);
    term.press('Escape');
    await term.waitFor('the confirmation hint', /esc again to interrupt/, 5000);
    term.press('Escape');
    const screen = await term.waitFor('the interrupted turn', /interrupted/);
    assert.equal(occurrences(screen, 'tick40'), 1, 'the last word is only in the prompt, never in the reply');

    const sessionID = await theSession();
    const messages = (await client.session.messages({ sessionID })).data;
    const last = messages.at(-1);
    assert.equal(last.info.role, 'assistant');
    assert.equal(last.info.error?.name, 'MessageAbortedError');
    assert.deepEqual((await client.session.status()).data, {}, 'the session is idle again');
    await sleep(1500);
    assert.equal(occurrences(term.screen(), 'tick40'), 1, 'nothing streams after the abort');
  });

  test('a second TUI attached with -s shows the history and follows another client live', async () => {
    const sessionID = await theSession();
    second = new Terminal('resume');
    second.attach(server, 'tui-home-2', '-s', sessionID);
    // It opens scrolled to the end of the history: the slow turn and its interruption.
    await second.waitFor('the resumed session\'s history', /"Which editor\?"="Helix"[^]*slow: tick01[^]*interrupted/, 90000);

    // A prompt sent through the SDK streams onto both screens.
    await client.session.promptAsync({ sessionID, parts: [{ type: 'text', text: 'from another client' }] });
    await second.waitFor('the other client\'s reply on the second TUI', /You said: from another client/);
    await term.waitFor('the other client\'s reply on the first TUI', /You said: from another client/);
  });
});

describe('OpenCode\'s terminal UI across a tandem crash', { skip: tuiUnavailable() }, () => {
  let first;
  let restarted;
  let term;

  before(async () => {
    first = await startTandem();
    term = new Terminal('crash');
    term.attach(first);
  });

  after(async () => {
    term?.stop();
    await restarted?.stop();
    await first?.kill();
  });

  test('a turn cut by SIGKILL does not stay busy once tandem is back on the same port', async () => {
    await term.waitFor('the prompt', /Ask anything/, 90000);
    await term.type('run: sleep 30');
    await term.waitFor('the permission dialog', /Permission required/);
    term.press('Enter');
    await term.waitFor('the running turn', /esc interrupt/);

    await first.kill();
    restarted = await startTandem({ root: first.root, port: new URL(first.url).port });
    // The TUI reconnects without a cursor; the restarted server tells it to reload, and the session
    // tandem marked interrupted is shown idle again.
    await term.waitFor('the session to be idle again', { test: (screen) => !/esc interrupt/.test(screen) && /Ask anything|Build/.test(screen) }, 30000);
    const status = (await restarted.client().session.status()).data;
    assert.deepEqual(status, {}, 'tandem has no busy session');
  });
});
