"""The layering docs/architecture.md draws, checked on the source: each package of
``plugins/kafka_dr`` imports only the layers below it, and the pure core imports no client,
engine or scheduler library."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "plugins" / "kafka_dr"

#: What each layer may import from the package (itself always allowed). Top-level modules
#: count as layers of their own name (``alerts``, ``entry``, ``demo``).
ALLOWED = {
    "core": set(),
    # where fetched jars and built archives live: a path from the environment, nothing else
    "cache": set(),
    # where the shipped folders (Spark jobs, GX suites, DAG files) are: a path, nothing else
    "shipped": set(),
    "kafka": {"core", "cache"},
    "alerts": {"core"},
    "entry": {"core"},
    "spark": {"core", "kafka", "alerts", "entry", "cache"},
    "dq": {"core", "kafka", "spark", "entry", "shipped"},
    "workflows": {"core", "kafka", "spark", "dq", "alerts"},
    "airflow": {"core", "kafka", "spark", "dq", "workflows", "alerts", "shipped"},
    # the lab runs Airflow as a service with the environment the scheduler layer computes (airflow.env)
    "lab": {"core", "kafka", "spark", "workflows", "airflow", "cache", "shipped"},
    "bench": {"core", "kafka", "spark", "lab", "entry"},
    "demo": {"core", "kafka", "spark", "lab"},
    "gameday": {"core", "kafka", "lab", "alerts", "airflow", "shipped"},
    # the Prometheus exporter reads the clusters through the adapters; it runs no job or DAG
    "exporter": {"core", "kafka"},
    "cli": {
        "core",
        "kafka",
        "spark",
        "dq",
        "workflows",
        "airflow",
        "lab",
        "bench",
        "demo",
        "gameday",
        "exporter",
        "entry",
        "alerts",
        "shipped",
    },
}

#: Third-party libraries a layer must never import.
FORBIDDEN_LIBRARIES = {
    "core": ("confluent_kafka", "pyspark", "airflow", "great_expectations", "socket", "smtplib", "urllib", "requests"),
    "kafka": ("pyspark", "airflow", "great_expectations"),
    "alerts": ("pyspark", "airflow", "confluent_kafka"),
    "spark": ("airflow",),
    "dq": ("airflow",),
    "workflows": ("airflow",),
    "exporter": ("pyspark", "airflow", "great_expectations"),
}


def _layer(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


def test_every_layer_has_a_rule():
    layers = {_layer(p) for p in _modules()} - {"__main__"}
    assert layers <= set(ALLOWED), f"no import rule for {sorted(layers - set(ALLOWED))}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_only_the_layers_below_it(path):
    layer = _layer(path)
    allowed = ALLOWED.get(layer, set(ALLOWED)) | {layer}
    wrong = []
    for line, name in _imports(path):
        top = name.split(".")[0]
        if top == "kafka_dr" and name.count("."):
            target = name.split(".")[1]
            if target not in allowed:
                wrong.append(f"line {line}: {name} ({layer} may import {', '.join(sorted(allowed))})")
        elif top in FORBIDDEN_LIBRARIES.get(layer, ()):
            wrong.append(f"line {line}: {name} (the {layer} layer never imports {top})")
    assert not wrong, "\n".join(wrong)
