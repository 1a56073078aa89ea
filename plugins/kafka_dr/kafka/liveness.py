"""Whether anything listens at a cluster's bootstrap addresses, asked without a Kafka client.

A Kafka client asked about a cluster whose brokers are all dead keeps reconnecting until its
timeout (seconds); the failover's first question is exactly that one. Every bootstrap address
refusing the TCP connection answers it at once. Anything else (a connection accepted, a
timeout, an unreachable network) is left to the Kafka client: a proxy accepts and a cut
network drops, and neither says whether a broker behind it answers.
"""

from __future__ import annotations

import socket

#: per address: a refusal comes back in well under a millisecond on a live host
CONNECT_TIMEOUT_S = 1.0


def addresses(bootstrap_servers: str) -> list[tuple[str, int]]:
    """``host:port`` pairs of a bootstrap list (``[v6]:port`` and a ``PROTOCOL://`` prefix
    allowed); [] when an entry is not one (the Kafka client then judges the list alone)."""
    out = []
    for item in bootstrap_servers.split(","):
        item = item.strip().split("://", 1)[-1]
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            return []
        out.append((host.strip("[]"), int(port)))
    return out


def nothing_listens(bootstrap_servers: str, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """True only when every bootstrap address refuses a TCP connection."""
    found = addresses(bootstrap_servers)
    return bool(found) and all(_refused(host, port, timeout) for host, port in found)


def _refused(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:  # a timeout, no route, a name that does not resolve: not a refusal
        return False
