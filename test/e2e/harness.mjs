// Starts the built tandem binary and a headless Debian Chromium, the way a
// person would use them: `tandem web`, then the one-time login link it prints.
import { before, after } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '..', '..');
export const bin = path.resolve(process.env.TANDEM_BIN || path.join(repo, 'tandem'));
export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
// Screenshots go to a temporary directory, so a test run leaves the checkout clean; set
// UPDATE_SCREENSHOTS=1 to rewrite the committed ones in test/e2e/screenshots (the README shows them).
export const shots = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(here, 'screenshots') : path.join(tmpdir(), 'tandem-e2e-screenshots');
export const everything = path.join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const password = 'e2e-password-7f3a';

/**
 * Why the whole suite cannot run here, or null. Under CI (CI=true, set by .ci/run) a missing
 * dependency throws instead: CI installs everything, so absence is a broken setup, never a pass.
 */
export function missing() {
  return requiredInCI(whyMissing());
}

function whyMissing() {
  if (!existsSync(bin)) return `no tandem binary at ${bin} (go build -o tandem ./cmd/tandem, or set TANDEM_BIN)`;
  if (!existsSync(chromiumPath)) return `no Chromium at ${chromiumPath} (apt-get install chromium)`;
  return null;
}

/** Returns why (locally, to skip with that message), or throws it under CI. */
export function requiredInCI(why) {
  if (why && process.env.CI === 'true') throw new Error(`missing dependency (CI must install it): ${why}`);
  return why;
}

/**
 * Runs `tandem web --port 0 --no-open` in a fresh project directory with its
 * own XDG dirs and waits for the login link it prints. A restart passes the
 * stopped server's `root` (see stop's keep) and `port`, so it finds its data
 * and the browser its origin.
 */
export async function startTandem({ extraArgs = [], env = {}, root: reuse = null, port = 0 } = {}) {
  const root = reuse || mkdtempSync(path.join(tmpdir(), 'tandem-e2e-'));
  const project = path.join(root, 'project');
  const home = path.join(root, 'home');
  for (const d of [project, home]) mkdirSync(d, { recursive: true });
  if (!reuse) writeFileSync(path.join(project, 'README.md'), '# e2e project\n');
  const childEnv = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    TANDEM_SERVER_PASSWORD: password,
    TERM: 'xterm-256color',
    SHELL: '/bin/bash',
    ...env,
  };
  const proc = spawn(bin, ['web', '--port', String(port), '--no-open', ...extraArgs], { cwd: project, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const found = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tandem printed no login link within 15 s:\n${log}`)), 15000);
    const scan = (chunk) => {
      log += chunk.toString();
      const m = log.match(/(https?:\/\/[^\s"']+)\/auth\/login\?ticket=([^\s"']+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ base: m[1], loginURL: m[0] });
      }
    };
    proc.stdout.on('data', scan);
    proc.stderr.on('data', scan);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`tandem exited with ${code} before printing a login link:\n${log}`));
    });
  });
  const { base, loginURL } = await found;
  return {
    base,
    port: Number(new URL(base).port),
    root,
    loginURL,
    project,
    proc,
    log: () => log,
    /** Stops the server; keep leaves its directories for a restart. */
    async stop({ keep = false } = {}) {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
      if (!keep && existsSync(root)) rmSync(root, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * A logged-in page. The one-time link is spent by the login test, so other
 * tests sign in with the password (the same cookie, set through POST /auth/login).
 */
export async function loggedInPage(browser, server, options = {}, initScript = null) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  context.setDefaultTimeout(15000);
  if (initScript) await context.addInitScript(initScript);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  page.errors = errors;
  const res = await context.request.post(server.base + '/auth/login', { data: { password }, headers: { 'Content-Type': 'application/json' } });
  if (res.status() !== 204) throw new Error(`POST /auth/login = ${res.status()}: ${await res.text()}`);
  await page.goto(server.base + '/');
  await page.waitForSelector('[data-testid="conn"][data-state="live"]', { timeout: 10000 });
  return page;
}

/** Saves a screenshot as NAME.png in shots. */
export async function shot(page, name) {
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

/** The REST API as another client would use it: Basic auth with the server password. */
export async function rest(server, method, p, body) {
  const headers = { Authorization: 'Basic ' + Buffer.from(`tandem:${password}`).toString('base64') };
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  const res = await fetch(server.base + p, { method, headers, body: method === 'GET' ? undefined : JSON.stringify(body ?? {}) });
  const text = await res.text();
  let data = text;
  try {
    data = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, data };
}

/**
 * Starts Chromium and a tandem server before the enclosing suite's tests and stops both after them.
 * set receives { browser, server } once both run: `let browser, server;
 * browserAndServer((started) => ({ browser, server } = started));`
 */
export function browserAndServer(set, options = {}) {
  let browser, server;
  before(async () => {
    browser = await launchBrowser();
    server = await startTandem(options);
    set({ browser, server });
  });
  after(async () => {
    await server?.stop();
    await browser?.close();
  });
}

/** Polls fn until it returns a truthy value. */
export async function until(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}; last: ${last?.message || JSON.stringify(last)}`);
}

/**
 * Clicks "+ New" and waits until the new session is open with the focus in its composer: the click
 * creates the session first, so text typed before that lands in the inbox's composer, which the
 * new session's then replaces.
 */
export async function clickNewSession(page) {
  const before = await page.evaluate(() => location.hash);
  await page.click('[data-testid="new-session"]');
  await page.waitForFunction((was) => location.hash !== was && location.hash.startsWith('#/session/'), before);
  await page.locator('[data-testid="composer-input"]:focus').waitFor();
}
