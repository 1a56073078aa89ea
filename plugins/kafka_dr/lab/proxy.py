"""A loopback TCP proxy that a drill can cut and restore: the network between the
replication job and one cluster.

The lab starts that cluster with each broker's client listener *advertised* at a proxy port
(``Lab.up(proxied=...)``), so every connection a Kafka client makes to it, bootstrap and
per-broker alike, passes through here: :meth:`TcpProxy.for_cluster` forwards every broker's
proxy port to that broker. :meth:`TcpProxy.cut` drops every open connection and
resets new ones until :meth:`TcpProxy.restore`; like a partition, the client sees its
connections die and cannot reconnect.
"""

from __future__ import annotations

import select
import socket
import threading

from kafka_dr.lab.topology import LabCluster


class TcpProxy:
    def __init__(
        self, listen_port: int, target_port: int, host: str = "127.0.0.1", more: tuple[tuple[int, int], ...] = ()
    ) -> None:
        """Forward ``listen_port`` to ``target_port``, and each ``(listen, target)`` pair of ``more``."""
        self.listen_port, self.target_port, self.host = listen_port, target_port, host
        self.routes = ((listen_port, target_port), *more)
        self._cut = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._servers: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self.connections = 0

    @classmethod
    def for_cluster(cls, cluster: LabCluster) -> TcpProxy:
        """A proxy for every broker of a proxied lab cluster: each broker's proxy port to its client port."""
        routes = tuple((b.proxy_port, b.port) for b in cluster.nodes if b.proxy_port)
        if not routes:
            raise ValueError(
                f"lab cluster {cluster.name!r} is not proxied (start the lab with proxied=({cluster.name!r},))"
            )
        return cls(*routes[0], more=routes[1:])

    def start(self) -> TcpProxy:
        for listen, target in self.routes:
            srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind((self.host, listen))
            srv.listen(64)
            srv.settimeout(0.2)
            self._servers.append(srv)
            thread = threading.Thread(target=self._accept_loop, args=(srv, target), name=f"proxy-{listen}", daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    def cut(self) -> None:
        """Drop every open connection; refuse (reset) new ones until :meth:`restore`."""
        self._cut.set()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            _close(a)
            _close(b)

    def restore(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self._closed.set()
        self.cut()
        for srv in self._servers:
            _close(srv)
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _accept_loop(self, server: socket.socket, target_port: int) -> None:
        while not self._closed.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self._cut.is_set():
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
                _close(client)
                continue
            try:
                upstream = socket.create_connection((self.host, target_port), timeout=5)
            except OSError:
                _close(client)
                continue
            self.connections += 1
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        """Copy bytes both ways until either side closes or the proxy is cut."""
        socks = [a, b]
        try:
            while not self._cut.is_set():
                readable, _, _ = select.select(socks, [], [], 0.2)
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except OSError:
            return
        finally:
            _close(a)
            _close(b)
            with self._lock:
                if (a, b) in self._pairs:
                    self._pairs.remove((a, b))


def _close(s: socket.socket) -> None:
    try:
        s.close()
    except OSError:
        pass
