// The official @opencode-ai/sdk's file and search calls (find, file, vcs, and the v2 fs.find and
// fs.list the terminal UI uses for @ completion and to browse directories) against the built tandem binary, in a git project. Every JSON
// answer is checked against OpenCode's schema for its route.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { missing, requiredInCI, startTandem } from './harness.mjs';
import { check, responseSchema, templateOf } from './schema.mjs';

/** OpenCode 1.18.33's schemas of these routes' answers, extracted from its openapi.json. */
const opencode = JSON.parse(readFileSync(new URL('./testdata/opencode-file-schemas.json', import.meta.url)));

function hasGit() {
  try {
    execFileSync('git', ['--version'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'git is not on PATH';
  }
}

const skip = missing() ?? requiredInCI(hasGit()) ?? false;

describe('the SDK finds, lists and reads files through tandem', { skip }, () => {
  let server;
  let client;
  const exchanges = [];

  const write = (rel, content) => {
    const p = path.join(server.project, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, content);
  };
  const git = (...args) =>
    execFileSync('git', ['-c', 'user.name=compat', '-c', 'user.email=compat@example.com', ...args], { cwd: server.project, stdio: 'pipe' });

  before(async () => {
    server = await startTandem();
    client = server.client({}, exchanges);
    write('.gitignore', 'dist/\n*.log\n');
    write('src/components/Button.tsx', 'export const Button = () => null\n');
    write('src/server/routes.go', 'package server\n\nfunc Routes() {}\n');
    git('init', '-q');
    git('add', '-A');
    git('commit', '-q', '-m', 'init');
    write('src/components/Button.tsx', 'export const Button = () => "Button"\n');
    write('src/components/Dialog.tsx', 'export const Dialog = () => "Dialog"\n');
    write('dist/bundle.js', 'const Button = 1\n');
    write('debug.log', 'Button pressed\n');
  });

  after(async () => {
    await server?.stop();
  });

  function ok(result) {
    assert.equal(result.error, undefined, `unexpected error body: ${JSON.stringify(result.error)}`);
    assert.equal(result.response.status, 200);
    return result.data;
  }

  test('find.files ranks the file a few letters point at first and leaves ignored files out', async () => {
    const found = ok(await client.find.files({ query: 'btn' }));
    assert.equal(found[0], 'src/components/Button.tsx');
    const all = ok(await client.find.files({ query: 'b', limit: 200 }));
    assert.ok(!all.some((p) => p.startsWith('dist/') || p.endsWith('.log')), JSON.stringify(all));
    assert.deepEqual(ok(await client.find.files({ query: 'comp', type: 'directory' })), ['src/components/']);
  });

  test('the v2 fs.find the TUI calls for @ completion answers typed entries and its location', async () => {
    const res = ok(await client.v2.fs.find({ query: 'dialog', limit: '20', location: { directory: server.project } }));
    assert.equal(res.location.directory, server.project);
    assert.deepEqual(res.data[0], { path: 'src/components/Dialog.tsx', type: 'file' });
  });

  test('the v2 fs.list the TUI browses directories with answers the children of one directory', async () => {
    const res = ok(await client.v2.fs.list({ path: 'src', location: { directory: server.project } }));
    assert.deepEqual(res.data, [
      { path: 'src/components', type: 'directory' },
      { path: 'src/server', type: 'directory' },
    ]);
  });

  test('find.text answers ripgrep matches, ignored files skipped', async () => {
    const matches = ok(await client.find.text({ pattern: 'Button' }));
    const paths = [...new Set(matches.map((m) => m.path.text))].sort();
    assert.deepEqual(paths, ['src/components/Button.tsx']);
    assert.equal(matches[0].submatches[0].match.text, 'Button');
  });

  test('find.symbols is an honest empty list', async () => {
    assert.deepEqual(ok(await client.find.symbols({ query: 'Routes' })), []);
  });

  test('file.list, file.read and file.status describe the work tree against HEAD', async () => {
    const nodes = ok(await client.file.list({ path: '' }));
    const byName = Object.fromEntries(nodes.map((n) => [n.name, n]));
    assert.equal(byName.dist.ignored, true);
    assert.equal(byName.src.ignored, false);
    assert.equal(nodes[0].type, 'directory');

    const content = ok(await client.file.read({ path: 'src/components/Button.tsx' }));
    assert.equal(content.content, 'export const Button = () => "Button"\n');
    assert.match(content.diff, /^\+export const Button = \(\) => "Button"$/m);
    assert.ok(content.patch.hunks.length > 0);

    const status = ok(await client.file.status()).sort((a, b) => a.path.localeCompare(b.path));
    assert.deepEqual(status, [
      { path: 'src/components/Button.tsx', added: 1, removed: 1, status: 'modified' },
      { path: 'src/components/Dialog.tsx', added: 1, removed: 0, status: 'added' },
    ]);
  });

  test('vcs.status lists the changed files without patches', async () => {
    const status = ok(await client.vcs.status()).sort((a, b) => a.file.localeCompare(b.file));
    assert.deepEqual(status.map((s) => [s.file, s.status]), [
      ['src/components/Button.tsx', 'modified'],
      ['src/components/Dialog.tsx', 'added'],
    ]);
  });

  test('vcs.diff has a patch per changed file', async () => {
    const diffs = ok(await client.vcs.diff({ mode: 'git' }));
    const button = diffs.find((d) => d.file === 'src/components/Button.tsx');
    assert.equal(button.additions, 1);
    assert.equal(button.deletions, 1);
    assert.match(button.patch, /^@@/m);
  });

  test('a path outside the project is refused', async () => {
    const res = await client.file.read({ path: '../../../etc/passwd' });
    assert.equal(res.response.status, 403);
    assert.match(res.error.data.message, /outside the project directory/);
  });

  test("every answer matches OpenCode's schema for its route", () => {
    let checked = 0;
    for (const ex of exchanges) {
      if (ex.status !== 200) continue;
      const template = templateOf(opencode, ex.method, ex.path);
      assert.ok(template, `no OpenCode route for ${ex.method} ${ex.path}`);
      const problems = check(opencode, responseSchema(opencode, ex.method, template), ex.body, `${ex.method} ${ex.path}`);
      assert.deepEqual(problems, [], problems.join('\n'));
      checked++;
    }
    assert.ok(checked >= 10, `only ${checked} answers checked`);
  });
});
