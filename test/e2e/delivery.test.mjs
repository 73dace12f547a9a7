// Delivery on a slow phone: the page carries the app's script and stylesheet and, for a signed-in
// browser, the first screen's data; it opens the event stream from its head, so a cold load needs
// two round trips in a row (the page, then the stream, which starts while the page still arrives)
// and nothing after them. Files go out precompressed (brotli) with immutable caching, JSON is
// gzipped, and the HTML shell paints before the script runs. The cold load is measured under
// Chromium's slow-4G profile (562.5 ms round trip, 1.44 Mbit/s down, as DevTools' preset) and 4x
// CPU throttling, and the figures are printed; only a generous hang guard bounds them.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, password, rest } from './harness.mjs';

const why = missing();
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
const slow4G = { offline: false, latency: 562.5, downloadThroughput: (1.6 * 1024 * 1024 * 0.9) / 8, uploadThroughput: (750 * 1024 * 0.9) / 8 };

/** A fresh context signed in with the password (a cookie), nothing cached. */
async function signedIn(browser, server, options = phone) {
  const context = await browser.newContext(options);
  context.setDefaultTimeout(60000);
  const res = await context.request.post(server.base + '/auth/login', { data: { password }, headers: { 'Content-Type': 'application/json' } });
  assert.equal(res.status(), 204);
  return context;
}

describe('delivery', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((s) => ({ browser, server } = s));

  test('the shell paints a header, an inbox and a composer before the script runs', async () => {
    // No script at all: what shows is what index.html paints by itself.
    const context = await signedIn(browser, server, { viewport: { width: 1280, height: 800 }, javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(server.base + '/', { waitUntil: 'domcontentloaded' });
    const shell = page.getByTestId('shell');
    await shell.waitFor({ state: 'visible' });
    for (const part of ['.s-top', '.s-list', '.s-composer .s-input']) assert.ok(await shell.locator(part).isVisible(), `${part} is painted`);
    assert.match(await shell.locator('.s-top').innerText(), /tandem/);
    await context.close();
  });

  /** The first screen's data a page carries (its #tandem-data element), or null. */
  async function pageData(request) {
    const res = await request.get(server.base + '/');
    assert.equal(res.status(), 200);
    assert.equal(res.headers()['cache-control'], 'private, no-cache', 'the page is never kept by a shared cache');
    const m = (await res.text()).match(/<script type="application\/json" id="tandem-data">([^<]*)<\/script>/);
    return m && JSON.parse(m[1]);
  }

  test('the page carries the session list for a signed-in cookie and nothing without one', async () => {
    const title = 'carried </script><script>alert(1)</script>';
    const made = await rest(server, 'POST', '/session', { title });
    assert.equal(made.status, 200);
    const context = await signedIn(browser, server);
    const snap = await pageData(context.request);
    assert.ok(snap, 'a signed-in page carries data');
    assert.ok(snap['/session'].some((s) => s.id === made.data.id && s.title === title), 'with the session list, its title intact');
    for (const path of ['/session/status', '/agent', '/config/providers']) assert.ok(path in snap, `and ${path}`);
    const stranger = await browser.newContext();
    assert.equal(await pageData(stranger.request), null, 'a page without the cookie carries nothing');
    // A signed-out browser still gets the login form.
    const page = await stranger.newPage();
    await page.goto(server.base + '/');
    await page.getByTestId('login-form').waitFor();
    await stranger.close();
    // And a signed-in one shows the carried list and goes live while every request for the list
    // is held: what it shows came with the page.
    const held = [];
    const tab = await context.newPage();
    await tab.route((url) => url.pathname === '/session', (route) => held.push(route));
    await tab.goto(server.base + '/');
    await tab.getByTestId('session-list').getByText('carried', { exact: false }).waitFor();
    await tab.locator('[data-testid="conn"][data-state="live"]').waitFor();
    await tab.locator('.composer textarea').waitFor({ state: 'attached' });
    await tab.unroute((url) => url.pathname === '/session');
    for (const r of held) await r.continue();
    await context.close();
    await rest(server, 'DELETE', `/session/${made.data.id}`);
  });

  test('a cold load on slow 4G with a 4x slower CPU: bytes on the wire and time to a usable page', { timeout: 120000 }, async () => {
    const made = await rest(server, 'POST', '/session', { title: 'an inbox to show' });
    assert.equal(made.status, 200);
    const context = await signedIn(browser, server);
    await context.addInitScript(() => {
      // Stamps the moment the app is usable: signed in, live, the composer on screen; and, apart,
      // the moment the inbox shows its sessions beside the composer (the stream may not be open yet).
      const check = () => {
        const composer = document.querySelector('.composer textarea');
        if (!window.__inbox && composer && document.querySelector('.session-list a[href^="#/session/"]')) window.__inbox = performance.now();
        if (window.__usable) return;
        if (document.querySelector('[data-testid="conn"][data-state="live"]') && composer) window.__usable = performance.now();
      };
      new MutationObserver(check).observe(document, { subtree: true, childList: true, attributes: true });
    });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    await cdp.send('Network.emulateNetworkConditions', slow4G);
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
    const requests = new Map();
    let t0 = 0;
    const ms = (ts) => (ts - t0) * 1000;
    cdp.on('Network.requestWillBeSent', (e) => {
      if (!t0) t0 = e.timestamp;
      requests.set(e.requestId, { url: e.request.url, start: ms(e.timestamp), headers: {}, bytes: 0, size: 0 });
    });
    cdp.on('Network.responseReceived', (e) => {
      const r = requests.get(e.requestId);
      if (!r) return;
      r.type = e.type;
      r.headers = Object.fromEntries(Object.entries(e.response.headers).map(([k, v]) => [k.toLowerCase(), v]));
      r.head = ms(e.timestamp); // the answer's head arrived (a stream's: it is open)
    });
    cdp.on('Network.dataReceived', (e) => {
      const r = requests.get(e.requestId);
      if (r) r.size += e.dataLength;
    });
    cdp.on('Network.loadingFinished', (e) => {
      const r = requests.get(e.requestId);
      if (r) Object.assign(r, { bytes: e.encodedDataLength, end: ms(e.timestamp) });
    });
    await page.goto(server.base + '/');
    const usable = await page.waitForFunction(() => window.__usable, null, { timeout: 60000, polling: 100 }).then((h) => h.jsonValue());
    const inbox = await page.evaluate(() => window.__inbox || 0);
    const paint = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime || 0);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });

    const ours = [...requests.values()].filter((r) => r.url.startsWith(server.base));
    const doc = ours.find((r) => r.type === 'Document');
    assert.equal(doc.headers['cache-control'], 'private, no-cache');
    assert.equal(doc.headers['content-encoding'], 'gzip', 'the signed-in page is compressed');
    const stream = ours.find((r) => new URL(r.url).pathname === '/event');
    assert.ok(stream, 'the event stream was opened');
    // Structure, not time: before the stream is open the app asks for none of the first screen's
    // data (it came with the page, and is asked for again only once the stream is open, to miss
    // nothing in between), and the stream is all it waits for to be usable: two round trips in a
    // row, the page and the stream. (Extras, such as the MCP tool list, load beside it.)
    const firstScreen = new Set(['/session', '/session/status', '/permission', '/question', '/mcp/elicitation', '/agent', '/config/providers', '/pty', '/mcp']);
    const before = ours.filter((r) => r.start < stream.head && firstScreen.has(new URL(r.url).pathname));
    assert.deepEqual(before.map((r) => new URL(r.url).pathname), [], 'no first-screen data is asked for before the stream is open');
    assert.ok(!ours.some((r) => /\/assets\/index-[^/]+\.(js|css)$/.test(r.url)), 'the app\'s script and stylesheet come with the page');
    const sequential = 2;
    const all = ours.filter((r) => !r.headers['content-type']?.startsWith('text/event-stream'));
    const bigJSON = all.filter((r) => r.headers['content-type']?.startsWith('application/json') && r.size > 1024);
    for (const r of bigJSON) assert.equal(r.headers['content-encoding'], 'gzip', `${r.url} (${r.size} bytes) is gzipped`);
    // The terminal's script, loaded when a terminal opens, is a file: brotli, cached for good.
    const html = await (await context.request.get(server.base + '/')).text();
    const chunk = html.match(/import\(`(\/assets\/[^`]+\.js)`\)/)[1];
    const res = await context.request.get(server.base + chunk, { headers: { 'Accept-Encoding': 'br, gzip' } });
    assert.equal(res.headers()['content-encoding'], 'br', 'a script file goes out as brotli');
    assert.match(res.headers()['vary'] || '', /Accept-Encoding/);
    assert.match(res.headers()['cache-control'] || '', /immutable/);
    const wire = all.reduce((n, r) => n + r.bytes, 0);
    const decoded = all.reduce((n, r) => n + r.size, 0);
    console.log(`cold load on slow 4G + 4x CPU: page head ${Math.round(doc.head)} ms, end ${Math.round(doc.end)} ms; stream asked ${Math.round(stream.start)} ms, open ${Math.round(stream.head)} ms; ${all.length} requests, ${(wire / 1024).toFixed(1)} KB on the wire (${(decoded / 1024).toFixed(1)} KB decoded); ${sequential} round trips in a row; first paint ${Math.round(paint)} ms, inbox and composer ${Math.round(inbox)} ms, usable ${Math.round(usable)} ms`);
    for (const r of ours) console.log(`  ${r.bytes.toString().padStart(7)} B  ${(r.headers['content-encoding'] || '-').padEnd(4)} ${Math.round(r.start).toString().padStart(5)}-${Math.round(r.end ?? r.head ?? 0).toString().padStart(5)} ms  ${new URL(r.url).pathname}`);
    await context.close();
    await rest(server, 'DELETE', `/session/${made.data.id}`);
  });
});
