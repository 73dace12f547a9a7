// OpenCode's terminal UI connecting a provider with an API key against tandem: /connect lists the
// providers tandem knows, the key typed into the dialog is stored by PUT /auth/{providerID}, the
// provider's models appear at once, and a prompt goes to a scripted OpenAI-compatible server on
// loopback with that key.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTandem, user, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

/**
 * A scripted OpenAI-compatible Chat Completions server on 127.0.0.1: every completion streams reply
 * word by word. It records every request with its Authorization header.
 */
function startScriptedLLM(reply) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization, body });
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"not found"}}');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (delta, finish) =>
        `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: 'gpt-scripted', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ role: 'assistant', content: '' }, null));
      for (const word of reply.split(/(?<= )/)) res.write(chunk({ content: word }, null));
      res.write(chunk({}, 'stop'));
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({
      baseURL: `http://127.0.0.1:${server.address().port}/v1`,
      requests,
      close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
    }));
  });
}

describe('OpenCode\'s terminal UI connects a provider with an API key', { skip: tuiUnavailable() }, () => {
  const key = 'sk-tui-5e8a1c93';
  let llm;
  let server;
  let client;
  let term;

  before(async () => {
    llm = await startScriptedLLM('hello through the stored key');
    // The provider is in the user's own file (always trusted); it names its key variable, so it
    // waits for a key before it is connected.
    const root = mkdtempSync(path.join(tmpdir(), 'tandem-compat-'));
    const userConfig = path.join(root, 'server-home', '.config', 'tandem');
    mkdirSync(userConfig, { recursive: true });
    writeFileSync(path.join(userConfig, 'tandem.json'), JSON.stringify({
      provider: { scripted: { name: 'Scripted', env: ['SCRIPTED_API_KEY'], options: { baseURL: llm.baseURL }, models: { 'gpt-scripted': { name: 'GPT Scripted' } } } },
    }));
    server = await startTandem({ root });
    client = server.client();
    term = new Terminal('connect');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    await server?.stop();
    await llm?.close();
  });

  test('/connect lists the configured provider, which is not connected yet', async () => {
    // OpenCode's binary takes 10–20 s to boot on a small machine before it sends its first request.
    await term.waitFor('the prompt', /Ask anything/, 90000);
    assert.deepEqual((await client.provider.list()).data.connected, ['demo']);
    term.tmux('send-keys', '-t', term.target, '-l', '/connect');
    await term.waitFor('the command completion', /Connect provider/);
    term.press('Enter');
    const dialog = await term.waitFor('the provider dialog', /Connect a provider[^]*Scripted/);
    assert.match(dialog, /Anthropic/);
  });

  test('the key typed into the dialog is stored and the provider\'s models are listed at once', async () => {
    term.tmux('send-keys', '-t', term.target, '-l', 'Scripted');
    await sleep(500);
    term.press('Enter');
    await term.waitFor('the API key prompt', /API key/);
    term.tmux('send-keys', '-t', term.target, '-l', key);
    await sleep(300);
    term.press('Enter');
    // The TUI then calls POST /instance/dispose and reloads its providers, as against OpenCode; the
    // model list follows once the key dialog has closed.
    const models = await term.waitFor('the provider\'s model list', { test: (screen) => /GPT Scripted/.test(screen) && !/API key/.test(screen) });
    assert.doesNotMatch(models, new RegExp(key), 'the key is not shown');
    const list = (await client.provider.list()).data;
    assert.ok(list.connected.includes('scripted'), JSON.stringify(list.connected));
    assert.equal(list.all.find((p) => p.id === 'scripted').source, 'api');
  });

  test('a prompt to the chosen model reaches the scripted server with the key', async () => {
    term.press('Enter'); // choose GPT Scripted
    await sleep(500);
    await term.type('hi scripted');
    const screen = await term.waitFor('the scripted reply', /hello through the stored key/, 30000);
    assert.match(screen, /GPT Scripted/);
    const completions = llm.requests.filter((r) => r.url.endsWith('/chat/completions'));
    assert.ok(completions.length >= 1, 'the scripted server was called');
    for (const r of completions) assert.equal(r.authorization, `Bearer ${key}`);
    await waitFor('the session to be idle', async () => Object.keys((await client.session.status()).data).length === 0);
  });
});
