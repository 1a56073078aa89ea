"""A dry-run failover's verdict: the refusals it would meet without force, printed first."""

from kafka_dr.workflows.failover import format_summary, would_refuse


def _summary(down_refusal=None, parity_refuses=False, dry_run=True) -> dict:
    return {
        "failed": "east",
        "survivor": "west",
        "dry_run": dry_run,
        "confirm_down": {"failed": "east", "failed_answers": down_refusal is not None, "would_refuse": down_refusal},
        "parity": {
            "verdict": "not ready" if parity_refuses else "ready",
            "differences": [],
            "would_refuse": parity_refuses,
        },
        "consumer_groups": [],
        "rpo": {"flows": {}},
        "record_active": {"active_cluster": "west", "state": "would record"},
    }


def test_a_dry_run_with_the_failed_cluster_answering_would_be_refused():
    s = _summary("east still answers (force to override)")
    assert would_refuse(s) == ["east still answers (force to override)"]
    assert "  verdict: would be refused: east still answers (force to override)" in format_summary(s).splitlines()


def test_both_refusals_are_named_in_order():
    s = _summary("east still answers (force to override)", parity_refuses=True)
    assert would_refuse(s) == [
        "east still answers (force to override)",
        "west is not ready (parity; force to override)",
    ]


def test_a_dry_run_that_would_go_ahead_says_so():
    assert would_refuse(_summary()) == []
    assert "  verdict: would go ahead" in format_summary(_summary()).splitlines()


def test_a_real_run_prints_no_verdict():
    assert not any("verdict:" in line for line in format_summary(_summary(dry_run=False)).splitlines())


def test_a_group_moved_from_its_last_sync_is_told_how_many_records_it_reads_again_at_most():
    s = _summary(dry_run=False)
    s["consumer_groups"] = [
        {
            "group": "app",
            "topic": "orders",
            "partition": 0,
            "action": "committed",
            "target_offset": 40,
            "status": "exact",
            "synced_age_s": 3.0,
            "reread_since_sync_at_most": 12,
        }
    ]
    assert (
        "    its position there was synced 3 s before this run: what the group read on east after that is read "
        "again (at most 12 record(s): what was copied from there on)"
    ) in format_summary(s).splitlines()
