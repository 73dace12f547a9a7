// A terminal for the suites that drive OpenCode's terminal UI: a tmux server of its own, whose screen
// the tests read as a person would.
import { execFileSync, spawnSync } from 'node:child_process';

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
