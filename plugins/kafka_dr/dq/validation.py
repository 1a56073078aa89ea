"""Great Expectations over the comparison table: suites from ``expectations/``, one Checkpoint,
Data Docs.

The suites are reviewable JSON files in the repository's ``expectations/`` folder (GX 1.x
format; each expectation carries ``meta.check``, the name failures are reported under, and a
``row_condition`` on ``kind``). Every run loads them into a GX *file* context under
``data_quality.dir`` (so the runtime state, validation results and Data Docs never land in the
repository), with a pandas data source over the comparison table, one validation definition
per suite and one Checkpoint whose action rebuilds Data Docs. Thresholds are expectation
parameters taken from the config at run time (``$PARAMETER`` in the files).

Why pandas and not the Spark data source: the table is small by construction (one row per
topic-partition window; the records were reduced by Spark before), and GX runs one Spark job
per metric, about a second each on the lab: tens of seconds per run for nothing.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_dr.core.dq import INDEX_COLUMNS, CheckFailure
from kafka_dr.shipped import folder

log = logging.getLogger(__name__)

EXPECTATIONS_DIR = folder("expectations")
SUITES = ("kafka_dr_partitions", "kafka_dr_schema_registry", "kafka_dr_topic_configs")
CHECKPOINT = "kafka_dr_clusters_agree"
DATA_SOURCE, ASSET, BATCH = "kafka_dr", "comparison", "comparison_table"


def suite_documents(folder: Path = EXPECTATIONS_DIR) -> list[dict]:
    """The suite files, as written in the repository."""
    out = []
    for name in SUITES:
        path = folder / f"{name}.json"
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError) as e:
            raise RuntimeError(f"data quality: cannot read expectation suite {path}: {e}") from None
    return out


def _columns(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(kwargs[k] for k in ("column_A", "column_B", "column") if k in kwargs)


def import_in_background() -> threading.Thread:
    """Import Great Expectations in a thread, to be joined before :func:`validate`: its import
    takes seconds of CPU (8 s on the lab host, tens under load) that overlap the comparison,
    when the driver only waits for Spark's tasks."""

    def load() -> None:
        try:
            import great_expectations  # noqa: F401
            from great_expectations.checkpoint import UpdateDataDocsAction  # noqa: F401
        except Exception:  # noqa: BLE001 - validate() imports again and reports the error
            log.debug("data quality: importing Great Expectations ahead failed", exc_info=True)

    thread = threading.Thread(target=load, name="kafka-dr-gx-import", daemon=True)
    thread.start()
    return thread


def validate(
    frame, context_dir: Path, parameters: Mapping[str, Any], run_name: str
) -> tuple[bool, list[CheckFailure], str | None]:
    """Run the Checkpoint on ``frame`` (a pandas DataFrame of the comparison table).

    Returns (success, failures, Data Docs index path)."""
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction
    from great_expectations.core.run_identifier import RunIdentifier

    context_dir.mkdir(parents=True, exist_ok=True)
    ctx = gx.get_context(mode="file", project_root_dir=str(context_dir))
    try:  # task logs, not terminal progress bars
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    except Exception:  # noqa: BLE001 - cosmetic
        pass
    ds = ctx.data_sources.add_or_update_pandas(DATA_SOURCE)
    try:
        asset = ds.get_asset(ASSET)
    except LookupError:
        asset = ds.add_dataframe_asset(ASSET)
    try:
        batch = asset.get_batch_definition(BATCH)
    except (KeyError, LookupError, ValueError):
        batch = asset.add_batch_definition_whole_dataframe(BATCH)

    definitions = []
    for doc in suite_documents():
        suite = ctx.suites.add_or_update(gx.ExpectationSuite(**doc))
        definitions.append(
            ctx.validation_definitions.add_or_update(gx.ValidationDefinition(name=doc["name"], data=batch, suite=suite))
        )
    checkpoint = ctx.checkpoints.add_or_update(
        gx.Checkpoint(
            name=CHECKPOINT,
            validation_definitions=definitions,
            actions=[UpdateDataDocsAction(name="update_data_docs")],
            result_format={"result_format": "COMPLETE", "unexpected_index_column_names": list(INDEX_COLUMNS)},
        )
    )
    result = checkpoint.run(
        batch_parameters={"dataframe": frame},
        expectation_parameters=dict(parameters),
        run_id=RunIdentifier(run_name=run_name),
    )
    failures = []
    for vr in result.run_results.values():
        for r in vr.results:
            if r.success:
                continue
            cfg = r.expectation_config
            check = (cfg.meta or {}).get("check", cfg.type)
            rows = tuple(dict(row) for row in (r.result or {}).get("unexpected_index_list") or ())
            if r.exception_info and r.exception_info.get("raised_exception"):
                rows = ({"kind": "error", "detail": r.exception_info.get("exception_message")},)
            failures.append(
                CheckFailure(
                    check, _columns(cfg.kwargs), rows, int((r.result or {}).get("unexpected_count") or len(rows))
                )
            )
    docs = None
    for site in ctx.get_docs_sites_urls():
        url = site.get("site_url") or ""
        docs = url[len("file://") :] if url.startswith("file://") else url
    return bool(result.success), failures, docs
