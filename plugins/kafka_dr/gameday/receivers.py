"""Real local alert receivers: an HTTP webhook endpoint and an SMTP server, both on 127.0.0.1,
each recording what it received and when (``received_at``/``messages_at``, epoch seconds).
The game day sends its alerts here; the tests use them as the alert channels' far ends."""

from __future__ import annotations

import asyncio
import hmac
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


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
    """A real SMTP server (aiosmtpd) on 127.0.0.1 that keeps every message it accepts.

    With ``tls`` (a certificate and key file) it offers STARTTLS, and with ``users`` (name to
    password) it accepts mail only after AUTH over TLS, as a relay on the internet does.
    ``logins`` records each AUTH attempt as (user, accepted); passwords are never kept."""

    def __init__(self, tls: tuple[Path, Path] | None = None, users: dict[str, str] | None = None) -> None:
        self.messages: list[dict] = []
        self.messages_at: list[float] = []
        self.logins: list[tuple[str, bool]] = []
        self.tls_sessions = 0
        context = None
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*map(str, tls))
        self.loop = asyncio.new_event_loop()

        def protocol() -> SMTP:
            return SMTP(
                _Keep(self),
                hostname="localhost",
                tls_context=context,
                require_starttls=context is not None,
                auth_required=bool(users),
                authenticator=_Authenticator(users or {}, self.logins) if users else None,
                loop=self.loop,
            )

        self.server = self.loop.run_until_complete(self.loop.create_server(protocol, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        threading.Thread(target=self.loop.run_forever, name="smtp-receiver", daemon=True).start()

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


class _Keep:
    """aiosmtpd's message handler: keep the envelope as a dict (from, to, data)."""

    def __init__(self, receiver: SmtpReceiver) -> None:
        self.receiver = receiver

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        data = envelope.content.decode(errors="replace") if isinstance(envelope.content, bytes) else envelope.content
        if session.ssl is not None:
            self.receiver.tls_sessions += 1
        self.receiver.messages.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "data": data})
        self.receiver.messages_at.append(time.time())
        return "250 queued"


class _Authenticator:
    def __init__(self, users: dict[str, str], logins: list[tuple[str, bool]]) -> None:
        self.users, self.logins = users, logins

    def __call__(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        user, password = auth_data.login.decode(), auth_data.password.decode()
        ok = user in self.users and hmac.compare_digest(self.users[user], password)
        self.logins.append((user, ok))
        return AuthResult(success=ok, handled=False)  # not handled: aiosmtpd answers a refusal with 535
