"""``kafka-dr lab up|status`` on a game day's or a drill's lab: a proxied cluster is named with
the addresses that answer while no run serves its proxy."""

from __future__ import annotations

from kafka_dr.cli.lab_cmd import print_proxy_notes
from kafka_dr.lab.topology import LabCluster


class _Lab:
    def __init__(self, *clusters: LabCluster) -> None:
        self._clusters = clusters

    def clusters(self):
        return list(self._clusters)


def test_a_proxied_cluster_is_named_with_the_brokers_past_its_proxy(capsys):
    east = LabCluster("east", 24092, 24093, brokers=3)
    west = LabCluster("west", 24192, 24193, proxy_port=24242, brokers=3)
    print_proxy_notes(_Lab(east, west))
    out = capsys.readouterr().out
    assert "east" not in out
    direct = ",".join(b.direct for b in west.nodes)
    assert "note: west sends its clients to a proxy" in out and out.rstrip().endswith(direct)
    assert str(west.proxy_port) not in direct


def test_a_lab_without_a_proxy_gets_no_note(capsys):
    print_proxy_notes(_Lab(LabCluster("east", 24092, 24093), LabCluster("west", 24192, 24193)))
    assert capsys.readouterr().out == ""
