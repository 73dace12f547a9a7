// OpenCode's terminal UI completing file names after "@" against tandem: the TUI asks tandem's
// GET /api/fs/find as a person types, shows the matches, and attaches the chosen file to the prompt.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { requiredInCI, startTandem, user } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

describe("OpenCode's terminal UI completes file names from tandem", { skip: tuiUnavailable(() => spawnSync('git', ['--version']).status !== 0 && requiredInCI('git is not installed')) }, () => {
  let server;
  let term;

  before(async () => {
    server = await startTandem();
    const write = (rel, content) => {
      const p = path.join(server.project, rel);
      mkdirSync(path.dirname(p), { recursive: true });
      writeFileSync(p, content);
    };
    write('.gitignore', 'dist/\n');
    write('src/server/bundler.go', 'package server\n');
    write('src/components/Button.tsx', 'export const Button = 1\n');
    write('dist/bundle.js', 'ignored\n');
    const git = (...args) => execFileSync('git', ['-c', 'user.name=compat', '-c', 'user.email=compat@example.com', ...args], { cwd: server.project, stdio: 'pipe' });
    git('init', '-q');
    git('add', '-A');
    git('commit', '-q', '-m', 'init');
    term = new Terminal('files');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    await server?.stop();
  });

  test('typing @ and a few letters lists the matching files, ignored ones left out', async () => {
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    await term.waitFor('the prompt', /Ask anything/, 90000);
    term.tmux('send-keys', '-t', term.target, '-l', '@bundle');
    const screen = await term.waitFor('the completion list', /src\/server\/bundler\.go/);
    assert.doesNotMatch(screen, /dist\/bundle\.js/, 'dist/ is in .gitignore');
  });

  test('choosing a match attaches the file to the prompt that is sent', async () => {
    term.press('Enter');
    await term.waitFor('the chosen file in the prompt', /@src\/server\/bundler\.go/);
    await sleep(300);
    await term.type(' what is this');
    await term.waitFor("the demo model's echo of the attachment", /attached file: src\/server\/bundler\.go/);
  });
});
