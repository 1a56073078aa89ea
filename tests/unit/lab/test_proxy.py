"""The drill's proxy forwards every broker of a proxied cluster and cuts them all at once."""

from __future__ import annotations

import socket

import pytest

from kafka_dr.lab.proxy import TcpProxy
from kafka_dr.lab.topology import lab_clusters


def test_for_cluster_routes_each_brokers_proxy_port_to_it():
    (east,) = lab_clusters(1, 40000, proxied=("east",), brokers=3)
    assert TcpProxy.for_cluster(east).routes == ((40050, 40000), (40060, 40010), (40070, 40020))
    with pytest.raises(ValueError, match="lab cluster 'east' is not proxied"):
        TcpProxy.for_cluster(lab_clusters(1, 40000)[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _refused(port: int) -> bool:
    """The proxy resets a new connection: at connect, or at the first read."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            client.settimeout(5)
            return client.recv(1) == b""
    except OSError:
        return True


def test_every_route_forwards_and_a_cut_cuts_them_all():
    servers = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    listen = [_free_port(), _free_port()]
    targets = [s.getsockname()[1] for s in servers]
    with TcpProxy(listen[0], targets[0], more=((listen[1], targets[1]),)) as proxy:
        for port, server in zip(listen, servers, strict=True):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
                conn, _ = server.accept()
                client.sendall(b"ping")
                assert conn.recv(4) == b"ping"
                conn.close()
        proxy.cut()
        assert all(_refused(port) for port in listen)
    for s in servers:
        s.close()
