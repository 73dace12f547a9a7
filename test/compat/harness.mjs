// Starts the built tandem binary the way a person would (`tandem serve` with a password, in a fresh
// project, with its own HOME and XDG directories) and hands out clients nobody on tandem wrote:
// the official @opencode-ai/sdk and OpenCode's own terminal UI.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { arch, platform, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpencodeClient } from '@opencode-ai/sdk/v2';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '..', '..');
export const bin = path.resolve(process.env.TANDEM_BIN || path.join(repo, 'bin', 'tandem'));
export const user = 'tandem';
export const password = 'compat-secret-4d1e';

/** The OpenCode platform binary npm installed as an optional dependency of opencode-ai. */
export const opencodeBin = path.join(here, 'node_modules', `opencode-${platform()}-${arch()}`, 'bin', 'opencode');

/** Why the suites cannot run here, or null; under CI (CI=true) a missing dependency throws instead. */
export function missing() {
  return requiredInCI(existsSync(bin) ? null : `no tandem binary at ${bin} (build it and set TANDEM_BIN)`);
}

/** Returns why (locally, to skip with that message), or throws it under CI, which installs everything. */
export function requiredInCI(why) {
  if (why && process.env.CI === 'true') throw new Error(`missing dependency (CI must install it): ${why}`);
  return why;
}

/** An isolated HOME with XDG directories inside it, so nothing on the machine leaks in or out. */
export function isolatedHome(root, name) {
  const home = path.join(root, name);
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
  };
  for (const d of Object.values(env)) mkdirSync(d, { recursive: true });
  return env;
}

/**
 * Runs `TANDEM_BIN serve` in a fresh project with TANDEM_SERVER_PASSWORD set and waits for the URL
 * it prints. No provider is configured, so the offline demo model answers. Given the root and port
 * of a server that died, it starts that server again on the same port, data and project. args are
 * extra flags of serve (--print-logs --log-level DEBUG puts every request in log()).
 */
export async function startTandem({ root = mkdtempSync(path.join(tmpdir(), 'tandem-compat-')), port = 0, args = [] } = {}) {
  const project = path.join(root, 'project');
  mkdirSync(project, { recursive: true });
  writeFileSync(path.join(project, 'README.md'), '# compat project\n');
  const env = {
    PATH: process.env.PATH,
    SHELL: '/bin/bash',
    TANDEM_SERVER_PASSWORD: password,
    ...isolatedHome(root, 'server-home'),
  };
  const proc = spawn(bin, ['serve', '--port', String(port), '--dir', project, ...args], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tandem printed no URL within 15 s:\n${log}`)), 15000);
    const scan = (chunk) => {
      log += chunk.toString();
      const m = log.match(/listening on (http:\/\/127\.0\.0\.1:\d+)\/?/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout.on('data', scan);
    proc.stderr.on('data', scan);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`tandem exited with ${code} before printing its URL:\n${log}`));
    });
  });
  return {
    url,
    root,
    project,
    log: () => log,
    /**
     * An official SDK client with tandem's credentials, scoped to the project directory. When
     * exchanges is given, every JSON response the client receives is appended to it, so a test can
     * check them all against OpenCode's schemas afterwards.
     */
    client(extra = {}, exchanges = null) {
      const recording = async (request) => {
        const response = await fetch(request);
        const type = response.headers.get('content-type') ?? '';
        if (exchanges && type.startsWith('application/json')) {
          exchanges.push({ method: request.method, path: new URL(request.url).pathname, status: response.status, body: await response.clone().json() });
        }
        return response;
      };
      return createOpencodeClient({ baseUrl: url, directory: project, headers: { Authorization: basic() }, fetch: recording, ...extra });
    },
    /** Kills the process the way a crash would, leaving its data for a restart. */
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGKILL');
        await exited;
      }
    },
    /**
     * Stops the process gracefully (SIGTERM, as systemctl, docker and Ctrl+C do), leaving its data
     * for a restart; after 5 s it is killed.
     */
    async terminate() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
    },
    async stop() {
      await this.terminate();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** HTTP Basic credentials as OpenCode's clients send them. */
export function basic() {
  return 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
}

/** Polls fn until it returns a truthy value or timeoutMs passes; the last value or error explains a failure. */
export async function waitFor(what, fn, timeoutMs = 10000, everyMs = 50) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last instanceof Error ? last.stack : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
