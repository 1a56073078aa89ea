"""Real local alert receivers: an HTTP webhook endpoint and an SMTP server, both on 127.0.0.1,
each recording what it received and when (``received_at``/``messages_at``, epoch seconds).
The game day sends its alerts here; the tests use them as the alert channels' far ends."""

from __future__ import annotations

import json
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class WebhookReceiver:
    def __init__(self) -> None:
        self.received: list[dict] = []
        self.received_at: list[float] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.received.append(json.loads(body))
                outer.received_at.append(time.time())
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


class SmtpReceiver:
    """A minimal SMTP server (RFC 5321 happy path): enough for smtplib to deliver mail."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.messages_at: list[float] = []
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                def say(line: str) -> None:
                    self.wfile.write((line + "\r\n").encode())

                say("220 localhost test SMTP")
                mail = {"from": None, "to": [], "data": ""}
                while True:
                    line = self.rfile.readline().decode(errors="replace").rstrip("\r\n")
                    if not line:
                        return
                    verb = line.split(" ", 1)[0].upper()
                    if verb in ("EHLO", "HELO"):
                        say("250 localhost")
                    elif verb == "MAIL":
                        mail["from"] = line.split(":", 1)[1].strip()
                        say("250 OK")
                    elif verb == "RCPT":
                        mail["to"].append(line.split(":", 1)[1].strip())
                        say("250 OK")
                    elif verb == "DATA":
                        say("354 end with .")
                        lines = []
                        while True:
                            d = self.rfile.readline().decode(errors="replace")
                            if d.rstrip("\r\n") == ".":
                                break
                            lines.append(d)
                        mail["data"] = "".join(lines)
                        outer.messages.append(dict(mail))
                        outer.messages_at.append(time.time())
                        say("250 queued")
                    elif verb == "QUIT":
                        say("221 bye")
                        return
                    else:
                        say("250 OK")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
