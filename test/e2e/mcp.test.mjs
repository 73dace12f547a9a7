// `tandem mcp` driven over stdio by the official TypeScript MCP SDK client, whose elicitation
// handler answers approvals like a person would: it reads the message, picks a decision.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { bin, password, requiredInCI } from './harness.mjs';

const why = requiredInCI(existsSync(bin) ? null : `no tandem binary at ${bin} (go build -o tandem ./cmd/tandem, or set TANDEM_BIN)`);

test('a task over stdio asks its approvals through elicitation', { skip: why ?? false, timeout: 60_000 }, async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'tandem-mcp-'));
  const project = path.join(root, 'project');
  const home = path.join(root, 'home');
  for (const d of [project, home]) mkdirSync(d, { recursive: true });
  const transport = new StdioClientTransport({
    command: bin,
    args: ['mcp', '--port', '0', '--dir', project, '--data-dir', path.join(home, 'data')],
    env: { PATH: process.env.PATH, HOME: home, XDG_STATE_HOME: path.join(home, 'state'), XDG_CONFIG_HOME: path.join(home, 'config'),
      TANDEM_SERVER_PASSWORD: password },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'node-e2e', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const { message, requestedSchema } = req.params;
    asked.push(message);
    const choices = requestedSchema.properties.decision.oneOf.map((o) => o.const);
    // The choices are the request's own decision list, allow once first.
    assert.equal(choices[0], 'once');
    for (const key of ['reject', 'reject-with-message']) assert.ok(choices.includes(key), `${key} is not offered: ${choices}`);
    // A person allows the harmless echo and rejects anything that removes files, saying why.
    if (message.includes('rm ')) return { action: 'accept', content: { decision: 'reject-with-message', message: 'do not delete anything' } };
    return { action: 'accept', content: { decision: 'once' } };
  });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['tandem', 'tandem-query', 'tandem-reply', 'tandem-sessions']);

    const first = await client.callTool({ name: 'tandem', arguments: { prompt: 'run: echo node-approved' } });
    const sid = first.structuredContent.sessionId;
    assert.match(sid, /^ses_/);
    assert.equal(first.structuredContent.status, 'completed');
    assert.match(first.structuredContent.answer, /node-approved/);
    assert.ok(asked[0].includes('echo node-approved') && asked[0].includes(project), asked[0]);

    const second = await client.callTool({ name: 'tandem-reply', arguments: { sessionId: sid, prompt: 'run: rm -rf build' } });
    assert.equal(second.structuredContent.sessionId, sid);
    assert.equal(asked.length, 2);
    assert.match(second.structuredContent.answer, /rejected .*do not delete anything/);

    const list = await client.callTool({ name: 'tandem-sessions', arguments: {} });
    assert.equal(list.structuredContent.sessions[0].sessionId, sid);
    assert.equal(list.structuredContent.sessions[0].client, 'node-e2e');
  } finally {
    await client.close();
    rmSync(root, { recursive: true, force: true });
  }
});
