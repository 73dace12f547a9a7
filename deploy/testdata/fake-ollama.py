#!/usr/bin/env python3
"""A stand-in for Ollama's OpenAI-compatible API, for deploy/image-test.sh.

Usage: fake-ollama.py ADDRESS PORT LOG

POST /v1/chat/completions streams one answer, "Ollama's <model> says hello.", the
way Ollama streams (Server-Sent Events of chat.completion.chunk objects, then
[DONE]), and appends the model asked for to LOG, one line a request. Any other
request gets Ollama's 404.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        model = body.get("model", "")
        with open(sys.argv[3], "a") as log:
            log.write(model + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

        def chunk(delta, finish=None):
            data = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")

        chunk({"role": "assistant", "content": f"Ollama's {model} says hello."})
        chunk({}, "stop")
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Handler).serve_forever()
