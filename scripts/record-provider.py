#!/usr/bin/env python3
"""A loopback recording proxy for an OpenAI-compatible provider (a llama.cpp server, say).

Every request is forwarded to the upstream base URL as it is, and its answer streamed back
unchanged; each exchange is saved in the output folder as `NNN.request.json` (the request
body, the system prompt replaced by its length and hash to keep the file small) and
`NNN.response.sse` (the response bytes exactly as the provider sent them). Tests replay the
responses with `cli/tests/wire/recorded.rs`.

    scripts/record-provider.py --upstream "$OPENAI_BASE_URL" --port 8790 --out recorded/case
    OPENAI_BASE_URL=http://127.0.0.1:8790/v1 agentgraph chat ...
"""

import argparse
import hashlib
import http.client
import json
import os
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()


def shrink(body: bytes) -> bytes:
    """The request body with the system prompt replaced by its length and hash."""
    try:
        req = json.loads(body)
    except ValueError:
        return body
    for m in req.get("messages", []):
        if m.get("role") == "system" and isinstance(m.get("content"), str):
            text = m["content"]
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            m["content"] = f"<system prompt: {len(text)} characters, sha256 {digest}>"
    return json.dumps(req, indent=1, ensure_ascii=False).encode()


class Proxy(BaseHTTPRequestHandler):
    upstream = None
    out = None
    counter = [0]

    def forward(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        up = Proxy.upstream
        path = up.path.rstrip("/") + self.path[len("/v1"):] if self.path.startswith("/v1") else self.path
        conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=3600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        conn.request(method, path, body=body or None, headers=headers)
        resp = conn.getresponse()
        record = method == "POST"
        if record:
            with LOCK:
                Proxy.counter[0] += 1
                n = Proxy.counter[0]
            with open(os.path.join(Proxy.out, f"{n:03}.request.json"), "wb") as f:
                f.write(shrink(body))
            saved = open(os.path.join(Proxy.out, f"{n:03}.response.sse"), "wb")
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            if record:
                saved.write(chunk)
                saved.flush()
            self.wfile.write(chunk)
            self.wfile.flush()
        if record:
            saved.close()
        conn.close()

    def do_POST(self):
        self.forward("POST")

    def do_GET(self):
        self.forward("GET")

    def log_message(self, fmt, *args):
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--upstream", required=True, help="the provider's base URL, e.g. http://127.0.0.1:8089/v1")
    p.add_argument("--port", type=int, default=8790)
    p.add_argument("--out", required=True, help="the folder the exchanges are saved in")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    Proxy.upstream = urllib.parse.urlparse(a.upstream)
    Proxy.out = a.out
    Proxy.counter[0] = len([f for f in os.listdir(a.out) if f.endswith(".request.json")])
    ThreadingHTTPServer(("127.0.0.1", a.port), Proxy).serve_forever()


if __name__ == "__main__":
    main()
