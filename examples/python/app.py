"""A plain script that serves HTTP on $PORT: all Slipway's python template needs."""

import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Hello(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from python\n"
        self.send_response(200)
        self.send_header("content-type", "text/plain; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    # Slipway tells the app where to listen; 8000 only for running it by hand.
    port = int(os.environ.get("PORT", "8000"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Hello)
    print(f"listening on port {port}", flush=True)
    server.serve_forever()
