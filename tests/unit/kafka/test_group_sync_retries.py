"""When the continuous group-offset sync looks at a position again: at once while it is not
exact, every round; after the same outcome many rounds in a row, only now and then."""

from __future__ import annotations

from kafka_dr.core.config_load import parse_config
from kafka_dr.kafka.group_sync import SAME_OUTCOME_ROUNDS, SLOW_RETRY_SECONDS, ContinuousGroupSync, settled

CFG = parse_config(
    {
        "clusters": {"east": {"bootstrap_servers": "127.0.0.1:9"}, "west": {"bootstrap_servers": "127.0.0.1:9"}},
        "flows": [{"source": "east", "target": "west"}],
    }
)


def row(status="exact", target=10, behind=0, topic="orders", partition=0):
    return {"topic": topic, "partition": partition, "status": status, "target_offset": target, "behind_records": behind}


def test_only_an_exact_position_the_copy_has_passed_is_settled():
    assert settled(row())
    assert not settled(row(behind=3))
    assert not settled(row(status="approximate"))
    assert not settled(row(status="untranslatable", target=None))


def test_an_unsettled_position_is_tried_every_round_until_it_repeats_then_every_half_minute():
    sync = ContinuousGroupSync(CFG, CFG.flows[0], clock=lambda: 0.0)
    sync._unsettled = {"app": {("orders", 0): 7}}
    for n in range(1, SAME_OUTCOME_ROUNDS):
        sync._note("app", row(status="approximate", target=0), now=float(n))
        assert sync._retries[("app", "orders", 0)][2] == float(n)  # due again at once
    sync._note("app", row(status="approximate", target=0), now=100.0)
    assert sync._retries[("app", "orders", 0)][2] == 100.0 + SLOW_RETRY_SECONDS
    sync._note("app", row(status="approximate", target=5, behind=2), now=101.0)  # the copy moved: at once again
    assert sync._retries[("app", "orders", 0)][1:] == (1, 101.0)
    sync._note("app", row(target=7), now=102.0)
    assert sync._unsettled == {"app": {}} and not sync._retries
