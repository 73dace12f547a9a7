// tandem restarted gracefully (SIGTERM, as systemctl restart, docker restart and Ctrl+C do) under
// the official SDK's event subscription and under OpenCode's terminal UI: both come back on their
// own, see the restarted server's state, and what was waiting for a person is still waiting.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test, after, before } from 'node:test';
import { missing, startTandem, waitFor } from './harness.mjs';
import { Terminal, sleep, tuiUnavailable } from './terminal.mjs';

/** Writes the user's own tandem.json (always trusted) of a server started by startTandem. */
function writeUserConfig(server, config) {
  const dir = path.join(server.root, 'server-home', '.config', 'tandem');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'tandem.json'), JSON.stringify(config));
}

/** A provider that waits for a key, so that /connect lists it; nothing is ever sent to it. */
function providerNamed(name) {
  return { name, env: ['UNSET_API_KEY'], options: { baseURL: 'http://127.0.0.1:1/v1' }, models: { m: { name: `${name} model` } } };
}

describe('the SDK\'s event subscription across a graceful restart', { skip: missing() ?? false }, () => {
  test('it reconnects after server.shutdown, is told to reload, and receives the restarted server\'s events', async () => {
    const first = await startTandem();
    const port = new URL(first.url).port;
    let second;
    const controller = new AbortController();
    try {
      const client = first.client();
      const events = [];
      let ended = false;
      // The SDK's own retry settings: what makes it come back is the server's doing.
      const sub = await client.event.subscribe(undefined, { signal: controller.signal });
      (async () => {
        try {
          for await (const ev of sub.stream) events.push(ev);
        } catch {
          // the abort at the end
        } finally {
          ended = true;
        }
      })();
      await waitFor('server.connected', () => events.find((e) => e.type === 'server.connected'));

      await first.terminate();
      const shutdown = events.findIndex((e) => e.type === 'server.shutdown');
      assert.ok(shutdown > 0, 'the stream said the server is shutting down');
      second = await startTandem({ root: first.root, port });

      await waitFor('server.connected after the restart', () => events.slice(shutdown).find((e) => e.type === 'server.connected'), 30000);
      await waitFor('server.instance.disposed after the restart', () => events.slice(shutdown).find((e) => e.type === 'server.instance.disposed'));
      const created = (await client.session.create({ title: 'after a graceful restart' })).data;
      await waitFor('session.created on the same subscription', () => events.find((e) => e.type === 'session.created' && e.properties.info.id === created.id));
      assert.equal(ended, false, 'the subscription is still open');
    } finally {
      controller.abort();
      await (second ?? first).stop();
    }
  });
});

/** The flags that put every request the server answers in its log(). */
const requestLog = ['--print-logs', '--log-level', 'DEBUG'];

/**
 * Waits until a client has opened the server's global event stream and then reloaded its sessions
 * (what OpenCode's TUI does on server.instance.disposed), as the server's request log shows.
 */
function reloaded(server) {
  return waitFor('the TUI to reconnect and reload', () => /path=\/global\/event status=200[^]*path=\/session status=200/.test(server.log()), 30000);
}

describe('OpenCode\'s terminal UI across a graceful restart', { skip: tuiUnavailable() }, () => {
  let server;
  let term;

  before(async () => {
    server = await startTandem();
    term = new Terminal('restart');
    term.attach(server);
  });

  after(async () => {
    term?.stop();
    await server?.stop();
  });

  /** Stops the server with SIGTERM and starts it again on the same port, data and project. */
  async function restart(configured) {
    await server.terminate();
    if (configured) writeUserConfig(server, configured);
    server = await startTandem({ root: server.root, port: new URL(server.url).port, args: requestLog });
  }

  test('a pending approval survives SIGTERM, and answering it in the same TUI finishes the turn', async () => {
    await term.waitFor('the prompt', /Ask anything/, 90000);
    await term.type('run: echo kept-across-a-restart');
    await term.waitFor('the permission dialog', /Permission required[^]*echo kept-across-a-restart/);
    const asked = (await server.client().permission.list()).data;
    assert.equal(asked.length, 1);

    // Configured while the server was down: the restarted server's providers differ from the
    // ones the TUI loaded when it started.
    await restart({ provider: { later: providerNamed('Added While Down') } });
    const client = server.client();
    assert.deepEqual((await client.permission.list()).data.map((p) => p.id), [asked[0].id], 'the same request is pending');
    await reloaded(server);

    await term.waitFor('the permission dialog after the restart', /Permission required[^]*echo kept-across-a-restart/);
    term.press('Enter');
    await term.waitFor('the command\'s output, streamed by the restarted server', /kept-across-a-restart output:/, 30000);
    await waitFor('the turn to end', async () => Object.keys((await client.session.status()).data).length === 0, 30000);
    assert.deepEqual((await client.permission.list()).data, []);
  });

  test('the restarted server\'s providers are offered without restarting the TUI', async () => {
    term.tmux('send-keys', '-t', term.target, '-l', '/connect');
    await term.waitFor('the command completion', /Connect provider/);
    term.press('Enter');
    await term.waitFor('the provider dialog', /Connect a provider[^]*Added While Down/);
    term.press('Escape');
    await sleep(500);
  });

  test('a provider added to the config appears in /connect after POST /instance/dispose', async () => {
    writeUserConfig(server, { provider: { later: providerNamed('Added While Down'), disposed: providerNamed('Added Then Disposed') } });
    const client = server.client();
    assert.equal((await client.instance.dispose()).data, true);
    assert.ok((await client.provider.list()).data.all.some((p) => p.id === 'disposed'), 'GET /provider lists it');
    term.tmux('send-keys', '-t', term.target, '-l', '/connect');
    await term.waitFor('the command completion', /Connect provider/);
    term.press('Enter');
    await term.waitFor('the provider dialog', /Connect a provider[^]*Added Then Disposed/);
    term.press('Escape');
  });
});
