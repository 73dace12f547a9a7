// A terminal for the suites that drive OpenCode's terminal UI: a tmux server of its own, whose screen
// the tests read as a person would.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isolatedHome, missing, opencodeBin, password, requiredInCI, user } from './harness.mjs';

/**
 * Why the suites that drive OpenCode's terminal UI cannot run here, or false when they can. Each
 * extra check returns its own reason or false.
 */
export function tuiUnavailable(...extra) {
  const m = missing();
  if (m) return m;
  if (spawnSync('tmux', ['-V']).status !== 0) return requiredInCI('tmux is not installed (apt-get install tmux)');
  if (!existsSync(opencodeBin)) return requiredInCI(`no OpenCode binary at ${opencodeBin} (npm ci in compat/)`);
  for (const check of extra) {
    const why = check();
    if (why) return why;
  }
  return false;
}

/** A tmux server of our own (its own socket), so the suite never touches anyone else's sessions. */
export class Terminal {
  constructor(name) {
    this.socket = `tandem-compat-${process.pid}-${name}`;
    this.target = name;
  }

  tmux(...args) {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' });
  }

  start(cwd, env, argv) {
    const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    this.tmux('-f', '/dev/null', 'new-session', '-d', '-s', this.target, '-x', '160', '-y', '48', '-c', cwd, ...envArgs, ...argv);
  }

  /**
   * Runs `opencode attach` against a tandem server (startTandem's), in its project directory and a
   * home of its own (home names it under the server's root), with extra arguments such as -s ID.
   */
  attach(server, home = 'tui-home', ...args) {
    const env = { ...isolatedHome(server.root, home), TERM: 'xterm-256color', PATH: process.env.PATH };
    this.start(server.project, env, [opencodeBin, 'attach', server.url, '-u', user, '-p', password, ...args]);
  }

  /** The visible screen as text, one line per row. */
  screen() {
    return this.tmux('capture-pane', '-p', '-t', this.target);
  }

  /** Types text literally, then presses Enter as a separate key, as a person does. */
  async type(text) {
    this.tmux('send-keys', '-t', this.target, '-l', text);
    await sleep(300);
    this.press('Enter');
  }

  press(key) {
    this.tmux('send-keys', '-t', this.target, key);
  }

  /** Waits until the screen matches pattern; a failure shows the last screen. */
  async waitFor(what, pattern, timeoutMs = 15000) {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      last = this.screen();
      if (pattern.test(last)) return last;
      await sleep(200);
    }
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${pattern}); the screen was:\n${last}`);
  }

  stop() {
    spawnSync('tmux', ['-L', this.socket, 'kill-server']);
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
