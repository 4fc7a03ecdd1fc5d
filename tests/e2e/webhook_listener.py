"""A webhook receiver for tests/e2e/t510-watch-notify.sh (python3 stdlib).

    python3 webhook_listener.py DIR FAIL

Listens on 127.0.0.1 on a free port and writes the port to DIR/port. Every
POST body is appended, one a line, to DIR/attempts.jsonl. The first FAIL
requests are answered 503 (the first with "Retry-After: 1", the others
without, so both the header and tpuform's own backoff are exercised); the
rest 200, their bodies appended to DIR/events.jsonl.
"""
import http.server
import os
import sys

out, fail = sys.argv[1], int(sys.argv[2])
seen = [0]


def append(name, body):
    with open(os.path.join(out, name), "ab") as f:
        f.write(body.replace(b"\n", b" ") + b"\n")


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        seen[0] += 1
        append("attempts.jsonl", body)
        if seen[0] <= fail:
            self.send_response(503)
            if seen[0] == 1:
                self.send_header("Retry-After", "1")
            self.end_headers()
            return
        append("events.jsonl", body)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
with open(os.path.join(out, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))
server.serve_forever()
