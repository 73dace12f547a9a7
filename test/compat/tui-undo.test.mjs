// OpenCode's terminal UI undoing and redoing a turn on tandem: `/undo` calls tandem's
// POST /session/{id}/revert, which puts back the files the agent's turn changed (from tandem's
// snapshots), and `/redo` calls POST /session/{id}/unrevert, which brings them back.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTandem, user, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

describe("OpenCode's terminal UI undoes and redoes a turn on tandem", { skip: tuiUnavailable() }, () => {
  let server;
  let client;
  let term;
  let file;

  before(async () => {
    server = await startTandem();
    client = server.client();
    file = path.join(server.project, 'undo-me.txt');
    term = new Terminal('undo');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    await server?.stop();
  });

  const content = () => (existsSync(file) ? readFileSync(file, 'utf8') : null);

  async function theSession() {
    const sessions = (await client.session.list()).data;
    assert.equal(sessions.length, 1, `expected the TUI's one session, got ${JSON.stringify(sessions.map((s) => s.id))}`);
    return sessions[0].id;
  }

  test('the agent writes a file', async () => {
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    await term.waitFor('the prompt', /Ask anything/, 90000);
    await term.type('hello before the write');
    await term.waitFor('the first reply', /You said: hello before the write/);
    await term.type('run: echo written-by-$((6*7)) > undo-me.txt');
    // The command and its writing redirection are each asked for: "Allow once" for every dialog.
    await term.waitFor('the permission dialog', /Permission required/);
    await waitFor('the file the command writes', async () => {
      if (/Permission required/.test(term.screen())) {
        term.press('Enter'); // "Allow once"
        await sleep(500);
      }
      return content() === 'written-by-42\n';
    }, 20000, 200).catch((e) => {
      throw new Error(`${e.message}\nthe screen:\n${term.screen()}`);
    });
    const sessionID = await theSession();
    await waitFor('the turn to end', async () => ((await client.session.status()).data[sessionID]?.type ?? 'idle') === 'idle');
  });

  test('/undo removes the file and hides the turn', async () => {
    await sleep(300);
    await term.type('/undo');
    await waitFor('the file to be gone', async () => content() === null, 15000);
    // The files are put back first, then the session is marked.
    const sessionID = await theSession();
    await waitFor('the session to be marked reverted', async () => (await client.session.get({ sessionID })).data.revert?.messageID);
    // The TUI reads the session's revert field: the count, how to redo, and the files (from its diff).
    const screen = await term.waitFor('the revert banner', /1 message reverted[^]*\/redo to restore[^]*undo-me\.txt -1/);
    assert.doesNotMatch(screen, /Error|NotFound|404/);
    assert.doesNotMatch(screen, /\$ echo written-by/, 'the undone command is hidden');
  });

  test('/redo brings the file back', async () => {
    // /undo put the undone prompt back into the input; clear it before typing the command.
    term.press('C-c');
    await sleep(300);
    await term.type('/redo');
    await waitFor('the file to come back', async () => content() === 'written-by-42\n', 15000);
    const sessionID = await theSession();
    await waitFor('the revert mark to clear', async () => !(await client.session.get({ sessionID })).data.revert);
    const screen = await term.waitFor('the turn back on screen', /\$ echo written-by-\$\(\(6\*7\)\) > undo-me\.txt/);
    assert.doesNotMatch(screen, /message reverted|Error|NotFound|404/);
  });

  test('a prompt after /undo drops the undone turn for good', async () => {
    await sleep(300);
    await term.type('/undo');
    await waitFor('the file to be gone again', async () => content() === null, 15000);
    await term.waitFor('the revert banner', /1 message reverted/);
    term.press('C-c');
    await sleep(300);
    await term.type('a fresh start');
    await term.waitFor('the reply', /You said: a fresh start/);
    const sessionID = await theSession();
    await waitFor('the turn to end', async () => ((await client.session.status()).data[sessionID]?.type ?? 'idle') === 'idle');
    const messages = (await client.session.messages({ sessionID })).data;
    assert.deepEqual(messages.map((m) => m.info.role), ['user', 'assistant', 'user', 'assistant']);
    assert.ok(!messages.some((m) => m.parts.some((p) => p.type === 'tool')), 'the undone command is gone');
    assert.equal(content(), null, 'the file stays undone');
    assert.doesNotMatch(term.screen(), /message reverted/);
  });
});
