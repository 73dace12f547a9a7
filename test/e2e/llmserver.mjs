// A loopback OpenAI-compatible server (Chat Completions, streamed), standing in for a local model
// server such as Ollama or LM Studio. Every request is recorded; each answer is `reply` (a string,
// or a function of the request body) streamed as two chunks.
import { createServer } from 'node:http';

export async function startLLM({ reply = 'Hello from the loopback model.', key = null } = {}) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (key && req.headers.authorization !== `Bearer ${key}`) {
        res.writeHead(401, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'wrong API key', type: 'invalid_request_error' } }));
        return;
      }
      if (req.method === 'GET' && req.url.endsWith('/models')) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'loop-1', object: 'model' }] }));
        return;
      }
      let json = {};
      try {
        json = JSON.parse(body);
      } catch {
        /* recorded as empty */
      }
      requests.push({ url: req.url, headers: req.headers, body: json });
      const text = typeof reply === 'function' ? reply(json) : reply;
      const half = Math.ceil(text.length / 2);
      const chunk = (delta, finish = null) => ({
        id: 'chatcmpl-loop',
        object: 'chat.completion.chunk',
        created: Math.floor(Date.now() / 1000),
        model: json.model || 'loop-1',
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      res.write(`data: ${JSON.stringify(chunk({ role: 'assistant', content: text.slice(0, half) }))}\n\n`);
      res.write(`data: ${JSON.stringify(chunk({ content: text.slice(half) }))}\n\n`);
      const last = chunk({}, 'stop');
      last.usage = { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 };
      res.write(`data: ${JSON.stringify(last)}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}/v1`;
  return {
    base,
    requests,
    /** The chat requests (not the title ones): those whose last message is the user's prompt text. */
    prompts: () => requests.filter((r) => Array.isArray(r.body.messages)),
    close: () => new Promise((r) => server.close(r)),
  };
}
