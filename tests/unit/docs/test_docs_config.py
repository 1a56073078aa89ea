"""docs/config.md documents every key the parser accepts, and no key it rejects."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_dr.core import config_load, config_sections
from kafka_dr.core.config import Schedules, SparkConfig, Thresholds

DOC = (Path(__file__).resolve().parents[3] / "docs" / "config.md").read_text(encoding="utf-8")


def table_keys(section: str) -> set[str]:
    """The first-column keys of the tables under ``## section``."""
    body = DOC.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", body, re.M)}


def test_top_level_keys():
    assert table_keys("Top level") == config_load.TOP_KEYS


def test_cluster_keys():
    keys = {k.split(".")[0] for k in table_keys("clusters")}
    assert keys == config_sections.CLUSTER_KEYS
    assert {k for k in table_keys("clusters") if k.startswith("schema_registry.")} == {
        "schema_registry.url",
        "schema_registry.topic",
    }


def test_flow_keys():
    keys = {k.split(".")[0] for k in table_keys("flows")}
    assert keys == config_sections.FLOW_KEYS
    assert {k for k in table_keys("flows") if k.startswith("topics.")} == {"topics.allow", "topics.deny"}


def test_section_keys():
    assert table_keys("schedules") == set(Schedules.__dataclass_fields__)
    assert table_keys("thresholds") == set(Thresholds.__dataclass_fields__)
    assert table_keys("alerts") == {
        *(
            f"email.{k}"
            for k in ("smtp_host", "smtp_port", "from", "to", "username", "password", "starttls", "ca_file")
        ),
        "webhook.url",
    }
    assert table_keys("spark") == set(SparkConfig.__dataclass_fields__)
    assert table_keys("schema_mirror") == {"primary", "targets", "subject_template"}
    assert table_keys("distribution") == {"tree"}


def test_topic_config_and_preflight_keys():
    assert table_keys("topic_config") == {"exclude"}
    assert table_keys("preflight") == {"exclude_topics"}
    assert table_keys("consumer_groups") == {"allow", "deny", "sync_interval_seconds"}
    assert table_keys("data_quality") == {"dir", "incremental", "full_sweep_hours"}
    assert table_keys("acl_sync") == {
        "read_only",
        "transactional_ids.allow",
        "transactional_ids.deny",
        "principals",
    }
