"""Parse the DAG folder the way Airflow does and print what a test needs to know, as JSON.

Run in a fresh interpreter so that "which heavy modules did parsing import" is a fair
question (the test process itself has imported them long before).
"""

import json
import os
import sys
import time

HEAVY = ("confluent_kafka", "pyspark", "great_expectations", "kafka_dr.kafka", "kafka_dr.lab")

t0 = time.monotonic()
from airflow.dag_processing.dagbag import DagBag  # noqa: E402

bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
elapsed = time.monotonic() - t0
print(
    json.dumps(
        {
            "import_errors": {k: str(v) for k, v in bag.import_errors.items()},
            "dags": {
                dag_id: {
                    "tags": sorted(dag.tags),
                    "max_active_runs": dag.max_active_runs,
                    "tasks": {t.task_id: t.retries for t in dag.tasks},
                    "timing": {
                        t.task_id: {
                            "execution_timeout": t.execution_timeout and t.execution_timeout.total_seconds(),
                            "retry_delay": t.retry_delay.total_seconds(),
                        }
                        for t in dag.tasks
                    },
                    "schedule": type(dag.timetable).__name__,
                    "paused_upon_creation": dag.is_paused_upon_creation,
                    "priority": {t.task_id: [t.priority_weight, str(t.weight_rule)] for t in dag.tasks},
                }
                for dag_id, dag in bag.dags.items()
            },
            "heavy_modules": sorted(m for m in sys.modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)),
            "seconds": elapsed,
        }
    )
)
