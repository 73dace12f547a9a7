// OpenCode's terminal UI showing a patch the agent applied on tandem: its apply_patch view reads
// the result's metadata.files (type, relativePath, filePath, patch, deletions) and renders one
// diff per file, titled by what happened to it; a task shows as "<Subagent> Task" with its description.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTandem, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

describe("OpenCode's terminal UI shows what apply_patch and task did on tandem", { skip: tuiUnavailable() }, () => {
  let server;
  let term;

  before(async () => {
    server = await startTandem();
    writeFileSync(path.join(server.project, 'gone.txt'), 'to be deleted\n');
    term = new Terminal('patch');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    await server?.stop();
  });

  test("a patch: prompt's three files are asked for once and shown as three diffs", async () => {
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    await term.waitFor('the prompt', /Ask anything/, 90000);
    const lines = [
      'patch:',
      '*** Begin Patch',
      '*** Update File: README.md',
      '-# compat project',
      '+# patched-heading',
      '*** Add File: added.txt',
      '+added-line-one',
      '*** Delete File: gone.txt',
      '*** End Patch',
    ];
    // ctrl+j is the TUI's newline inside the prompt; Enter sends it.
    for (const line of lines.slice(0, -1)) {
      term.tmux('send-keys', '-t', term.target, '-l', '--', line); // -- : a line may start with -
      term.press('C-j');
    }
    await term.type(lines[lines.length - 1]);
    let asked = 0;
    const added = path.join(server.project, 'added.txt');
    await waitFor('the files the patch writes', async () => {
      if (/Permission required/.test(term.screen())) {
        asked++;
        term.press('Enter'); // "Allow once"
        await sleep(1000);
      }
      return existsSync(added);
    }, 30000, 200).catch((e) => {
      throw new Error(`${e.message}\nthe screen:\n${term.screen()}`);
    });
    assert.equal(asked, 1, 'one request for the whole patch');
    assert.equal(readFileSync(path.join(server.project, 'README.md'), 'utf8'), '# patched-heading\n');
    assert.equal(existsSync(path.join(server.project, 'gone.txt')), false);
    await term.waitFor('each file of the patch under its own title, with its diff',
      /Patched README\.md[^]*patched-heading[^]*Created added\.txt[^]*added-line-one[^]*Deleted gone\.txt/, 20000);
  });

  test("a task: prompt's subagent is shown as a task with its description, and its answer follows", async () => {
    await term.type('task: explore | read: README.md');
    await waitFor('the task to be allowed and the turn to end', async () => {
      const screen = term.screen();
      if (/Permission required/.test(screen)) {
        term.press('Enter'); // "Allow once" for the task
        await sleep(1000);
      }
      return /read: README\.md[^]*`task` returned/.test(term.screen()) || /task_result/.test(term.screen());
    }, 30000, 300).catch((e) => {
      throw new Error(`${e.message}\nthe screen:\n${term.screen()}`);
    });
    await term.waitFor('the task with its subagent and description', /Explore Task[^]*read: README\.md/i, 20000);
  });
});
