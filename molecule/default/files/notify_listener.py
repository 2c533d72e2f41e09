"""The notifications' listener for the default scenario: a webhook on Docker's bridge gateway (the sim container
reaches this host there), each POST's body appended as one line to the file given, answered 200 as a chat webhook
answers. Started by converge.yml, read by verify/notify.yml, stopped by destroy.yml."""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Hook(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with open(sys.argv[3], "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"path": self.path, "body": body.decode("utf-8", "replace")}) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok": true}')


if __name__ == "__main__":
    HTTPServer((sys.argv[1], int(sys.argv[2])), Hook).serve_forever()
