// OpenCode's terminal UI showing a file the agent wrote on tandem: its Write view renders the
// written content once the result's metadata carries `diagnostics` (empty: tandem runs no language
// servers); without it the TUI shows only "← Write file".
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTandem, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

describe("OpenCode's terminal UI shows what the agent wrote on tandem", { skip: tuiUnavailable() }, () => {
  let server;
  let term;

  before(async () => {
    server = await startTandem();
    term = new Terminal('write');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    await server?.stop();
  });

  test("a write: prompt's file content is on the screen once the write is done", async () => {
    const file = path.join(server.project, 'shown.txt');
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    await term.waitFor('the prompt', /Ask anything/, 90000);
    // ctrl+j is the TUI's newline inside the prompt; Enter sends it.
    term.tmux('send-keys', '-t', term.target, '-l', 'write: shown.txt');
    term.press('C-j');
    term.tmux('send-keys', '-t', term.target, '-l', 'alpha-line-one');
    term.press('C-j');
    await term.type('beta-line-two');
    await waitFor('the file the agent writes', async () => {
      if (/Permission required/.test(term.screen())) {
        term.press('Enter'); // "Allow once"
        await sleep(500);
      }
      return existsSync(file);
    }, 30000, 200).catch((e) => {
      throw new Error(`${e.message}\nthe screen:\n${term.screen()}`);
    });
    assert.equal(readFileSync(file, 'utf8'), 'alpha-line-one\nbeta-line-two');
    const screen = await term.waitFor('the written content in the Write view', /Wrote[^]*shown\.txt[^]*alpha-line-one[^]*beta-line-two/);
    assert.doesNotMatch(screen, /← Write file/, 'the bare line is what the TUI shows without diagnostics');
  });
});
