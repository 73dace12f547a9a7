// OpenCode's terminal UI running the user's own shell commands (`!cmd`, POST /session/{id}/shell)
// and slash commands (GET /command, POST /session/{id}/command) against tandem: the output and the
// expanded command are read off the screen, as a person would see them.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTandem, user, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

/** Whether pid is a running process (not a zombie). */
function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe("OpenCode's terminal UI runs shell and slash commands on tandem", { skip: tuiUnavailable() }, () => {
  let server;
  let client;
  let term;

  before(async () => {
    server = await startTandem();
    client = server.client();
    const dir = path.join(server.project, '.opencode', 'command');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'hello.md'), '---\ndescription: greets by name\n---\nGreet $1 warmly\n');
    writeFileSync(path.join(server.project, 'marker-file.txt'), 'x\n');
    term = new Terminal('commands');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    await server?.stop();
  });

  test('!ls shows the command\'s output, with no permission dialog', async () => {
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    await term.waitFor('the prompt', /Ask anything/, 90000);
    term.tmux('send-keys', '-t', term.target, '-l', '!');
    await sleep(300);
    // The shell computes 6*7, so "shell-42" can only be on screen if the command really ran.
    await term.type('ls; echo shell-$((6*7))');
    const screen = await term.waitFor('the command output', /marker-file\.txt[^]*shell-42/);
    assert.doesNotMatch(screen, /Permission required/);
    const sessions = (await client.session.list()).data;
    assert.equal(sessions.length, 1);
    const messages = (await client.session.messages({ sessionID: sessions[0].id })).data;
    const tool = messages.at(-1).parts.find((p) => p.type === 'tool');
    assert.equal(tool?.tool, 'bash');
    assert.equal(tool.state.status, 'completed');
    assert.match(tool.state.output, /shell-42/);
  });

  test('Esc Esc stops a slow !command and its process group', async () => {
    // In the project: the kernel sandbox lets a command write there, not beside tandem's data directory.
    const pidFile = path.join(server.project, 'shell-sleep.pid');
    term.tmux('send-keys', '-t', term.target, '-l', '!');
    await sleep(300);
    await term.type(`sleep 300 & echo $! > ${pidFile}; wait; echo not-$((40+2))-reached`);
    await term.waitFor('the busy footer', /esc interrupt/);
    await waitFor('the sleep to start', () => existsSync(pidFile));
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    term.press('Escape');
    await sleep(200);
    term.press('Escape');
    await waitFor('the session to be idle', async () => Object.keys((await client.session.status()).data).length === 0);
    await waitFor('the sleep to be killed', () => !alive(pid));
    const screen = await term.waitFor('the aborted command', /Tool execution aborted[^]*interrupted/);
    assert.doesNotMatch(screen, /not-42-reached/);
  });

  test('the built-in /init and /review are offered', async () => {
    term.tmux('send-keys', '-t', term.target, '-l', '/ini');
    await term.waitFor('/init in the completion list', /\/init[^\n]*create or update AGENTS\.md/);
    for (let i = 0; i < 4; i++) term.press('BSpace');
    term.tmux('send-keys', '-t', term.target, '-l', '/revi');
    await term.waitFor('/review in the completion list', /\/review[^\n]*review the uncommitted changes/);
    for (let i = 0; i < 5; i++) term.press('BSpace');
    await sleep(300);
  });

  test('a project command is offered after / and runs with its argument substituted', async () => {
    term.tmux('send-keys', '-t', term.target, '-l', '/hello');
    await term.waitFor('the command in the completion list', /\/hello[^\n]*greets by name/);
    term.press('Enter'); // chooses it
    await term.waitFor('the chosen command in the prompt', /\/hello/);
    await sleep(300);
    await term.type('Ada');
    await term.waitFor("the demo model's echo of the expanded template", /You said: Greet Ada warmly/, 30000);
    await waitFor('the session to be idle', async () => Object.keys((await client.session.status()).data).length === 0);
  });
});
