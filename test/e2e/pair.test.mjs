// Pairing a phone: "Pair a device" in the UI and `tandem pair` make a one-time link whose code is
// in the URL fragment; the link signs a fresh browser in once and lands on the inbox with
// notifications offered; a second use, or a late one, is refused with a page that says why.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { missing, browserAndServer, loggedInPage, rest, bin } from './harness.mjs';

const why = missing();
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

/** Runs the tandem CLI as the server's user: the same home and XDG directories, so it finds the server. */
function cli(server, args) {
  const home = path.join(server.root, 'home');
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
  };
  return new Promise((resolve, reject) => {
    execFile(bin, args, { cwd: server.project, env, timeout: 20000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
  });
}

/** Opens link in a fresh context, as a phone that scanned the code would. */
async function openOnPhone(browser, link) {
  const context = await browser.newContext(phone);
  context.setDefaultTimeout(15000);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(link);
  return { context, page, errors };
}

describe('pairing a device', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((s) => ({ browser, server } = s));

  test('the UI’s link signs a second browser in once, lands on the inbox, and is refused the second time', async () => {
    const desk = await loggedInPage(browser, server);
    await rest(server, 'POST', '/session', { title: 'Paired inbox check' });
    await desk.getByTestId('pair-device').click();
    const dialog = desk.getByTestId('pair-dialog');
    await dialog.getByTestId('pair-qr').waitFor();
    assert.ok(await dialog.getByTestId('pair-qr').evaluate((img) => img.complete && img.naturalWidth > 0), 'the QR code is drawn');
    const link = await dialog.getByTestId('pair-link').inputValue();
    const url = new URL(link);
    assert.equal(url.origin + url.pathname, server.base + '/pair');
    assert.equal(url.search, '', 'nothing in a query string');
    assert.ok(url.hash.length > 20, 'the code is in the fragment');

    const phoneA = await openOnPhone(browser, link);
    await phoneA.page.waitForSelector('[data-testid="conn"][data-state="live"]');
    assert.equal(new URL(phoneA.page.url()).hash.startsWith('#/'), true);
    assert.ok(!phoneA.page.url().includes(url.hash.slice(1)), 'the code has left the address bar');
    await phoneA.page.getByText('Paired inbox check').first().waitFor();
    await phoneA.page.getByTestId('paired-notice').waitFor();
    assert.match(await phoneA.page.getByTestId('paired-notice').innerText(), /notifications/i);
    assert.deepEqual(phoneA.errors, []);

    const phoneB = await openOnPhone(browser, link);
    const refused = phoneB.page.getByTestId('pair-refused');
    await refused.waitFor();
    assert.equal(await refused.getAttribute('data-reason'), 'PairingUsedError');
    assert.match(await phoneB.page.getByTestId('pair-landing').innerText(), /already used/);
    const status = await phoneB.page.evaluate(() => fetch('/session/status').then((r) => r.status));
    assert.equal(status, 401, 'the refused device is not signed in');
    assert.ok(!server.log().includes(url.hash.slice(1)), 'the code is never logged');
    for (const c of [desk.context(), phoneA.context, phoneB.context]) await c.close();
  });

  test('`tandem pair` prints a QR code and a link that works once', async () => {
    const out = await cli(server, ['pair', '--ttl', '2m']);
    assert.match(out, /[█▀▄]{10}/, 'a QR code is drawn');
    const link = out.match(/https?:\/\/\S+\/pair#\S+/)?.[0];
    assert.ok(link, `a link in:\n${out}`);
    assert.match(out, /works once, for 2m0s/);
    const phoneA = await openOnPhone(browser, link);
    await phoneA.page.waitForSelector('[data-testid="conn"][data-state="live"]');
    const phoneB = await openOnPhone(browser, link);
    await phoneB.page.getByTestId('pair-refused').waitFor();
    await phoneA.context.close();
    await phoneB.context.close();
  });

  test('a link used after it expired is refused as expired', async () => {
    const { status, data } = await rest(server, 'POST', '/auth/pair', { ttl: 1 });
    assert.equal(status, 200, JSON.stringify(data));
    await new Promise((r) => setTimeout(r, 1500));
    const phone = await openOnPhone(browser, data.url);
    const refused = phone.page.getByTestId('pair-refused');
    await refused.waitFor();
    assert.equal(await refused.getAttribute('data-reason'), 'PairingExpiredError');
    await phone.context.close();
  });
});
