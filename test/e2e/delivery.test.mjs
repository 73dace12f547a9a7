// Delivery on a slow phone: the UI's files go out precompressed (brotli) with immutable caching,
// JSON is gzipped, and the HTML shell paints before the script runs. The cold load is measured
// under Chromium's slow-4G profile (562.5 ms round trip, 1.44 Mbit/s down, as DevTools' preset)
// and 4x CPU throttling, and the figures are printed; only a generous hang guard bounds them.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, password } from './harness.mjs';

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
    const context = await signedIn(browser, server, { viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    // No script at all: what shows is what index.html paints by itself.
    await page.route(/\/assets\/.*\.js$/, (route) => route.abort());
    await page.goto(server.base + '/', { waitUntil: 'domcontentloaded' });
    const shell = page.getByTestId('shell');
    await shell.waitFor({ state: 'visible' });
    for (const part of ['.s-top', '.s-list', '.s-composer .s-input']) assert.ok(await shell.locator(part).isVisible(), `${part} is painted`);
    assert.match(await shell.locator('.s-top').innerText(), /tandem/);
    await context.close();
  });

  test('a cold load on slow 4G with a 4x slower CPU: bytes on the wire and time to a usable page', { timeout: 120000 }, async () => {
    const context = await signedIn(browser, server);
    await context.addInitScript(() => {
      // Stamps the moment the app is usable: signed in, live, the composer on screen.
      const check = () => {
        if (window.__usable) return;
        if (document.querySelector('[data-testid="conn"][data-state="live"]') && document.querySelector('.composer textarea')) window.__usable = performance.now();
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
    const sent = new Map();
    let t0 = 0;
    cdp.on('Network.requestWillBeSent', (e) => {
      if (!t0) t0 = e.timestamp;
      sent.set(e.requestId, e.timestamp);
    });
    cdp.on('Network.responseReceived', (e) => {
      const h = Object.fromEntries(Object.entries(e.response.headers).map(([k, v]) => [k.toLowerCase(), v]));
      requests.set(e.requestId, { url: e.response.url, type: e.type, headers: h, bytes: 0, size: 0 });
    });
    cdp.on('Network.dataReceived', (e) => {
      const r = requests.get(e.requestId);
      if (r) r.size += e.dataLength;
    });
    cdp.on('Network.loadingFinished', (e) => {
      const r = requests.get(e.requestId);
      if (r) Object.assign(r, { bytes: e.encodedDataLength, start: (sent.get(e.requestId) - t0) * 1000, end: (e.timestamp - t0) * 1000 });
    });
    await page.goto(server.base + '/');
    const usable = await page.waitForFunction(() => window.__usable, null, { timeout: 60000, polling: 100 }).then((h) => h.jsonValue());
    const paint = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime || 0);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });

    const all = [...requests.values()].filter((r) => r.url.startsWith(server.base) && !r.headers['content-type']?.startsWith('text/event-stream'));
    const script = all.find((r) => /\/assets\/index-[^/]+\.js$/.test(r.url));
    assert.ok(script, 'the script was loaded');
    assert.equal(script.headers['content-encoding'], 'br', 'the script goes out as brotli');
    assert.match(script.headers['vary'] || '', /Accept-Encoding/);
    assert.match(script.headers['cache-control'] || '', /immutable/);
    const doc = all.find((r) => r.type === 'Document');
    assert.equal(doc.headers['cache-control'], 'no-cache');
    const bigJSON = all.filter((r) => r.headers['content-type']?.startsWith('application/json') && r.size > 1024);
    for (const r of bigJSON) assert.equal(r.headers['content-encoding'], 'gzip', `${r.url} (${r.size} bytes) is gzipped`);
    const wire = all.reduce((n, r) => n + r.bytes, 0);
    const decoded = all.reduce((n, r) => n + r.size, 0);
    console.log(`cold load on slow 4G + 4x CPU: ${all.length} requests, ${(wire / 1024).toFixed(1)} KB on the wire (${(decoded / 1024).toFixed(1)} KB decoded); first paint ${Math.round(paint)} ms, usable ${Math.round(usable)} ms`);
    for (const r of all) console.log(`  ${r.bytes.toString().padStart(7)} B  ${(r.headers['content-encoding'] || '-').padEnd(4)} ${Math.round(r.start ?? 0).toString().padStart(5)}-${Math.round(r.end ?? 0).toString().padStart(5)} ms  ${new URL(r.url).pathname}`);
    await context.close();
  });
});
