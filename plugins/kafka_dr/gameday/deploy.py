"""The game day's deployment, everything on loopback under one folder::

    <folder>/lab/            the lab: 3-broker clusters east and west (west behind a TCP proxy),
                             its Spark cluster (lab/spark), Airflow with PostgreSQL (lab/airflow*)
    <folder>/kafka-dr.yaml   the game day's config (the lab's, with game-day schedules and alerts)
    <folder>/gameday.log     what happened, when
    <folder>/evidence/       when a record was lost: each broker's dump of its partition

The proxy runs inside the game day's process: every client of west, the product's and the
game day's own, reaches west through it, so cutting it cuts west's network for everyone.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kafka_dr.airflow.dag_config import replication_dag_id
from kafka_dr.core.config import DrConfig
from kafka_dr.core.config_load import load_config
from kafka_dr.gameday.airflow_api import AirflowApi
from kafka_dr.gameday.game_config import game_config
from kafka_dr.gameday.receivers import SmtpReceiver, WebhookReceiver
from kafka_dr.gameday.script import FULL
from kafka_dr.lab.airflow_service import AirflowService, resolve_spec
from kafka_dr.lab.lab import Lab
from kafka_dr.lab.proxy import TcpProxy
from kafka_dr.lab.spark_cluster import SparkCluster, SparkLayout, point_lab_config
from kafka_dr.shipped import folder

#: The clusters a game day runs: east (the one that fails) and west (the survivor, proxied).
EAST, WEST = "east", "west"
GROUPS_REGEX = "gd-.*"
#: the shipped DAG file that defines one DAG per flow; every other one defines the DAG it is named after
REPLICATION_FILE = "dr_replication"


@dataclass(frozen=True)
class Ports:
    """Every port of a game day, from one base (the lab's brokers use base..base+199)."""

    base: int

    @property
    def spark(self) -> int:
        return self.base + 300

    @property
    def spark_ui(self) -> int:
        return self.base + 310

    @property
    def airflow(self) -> int:
        return self.base + 330

    @property
    def postgres(self) -> int:
        return self.base + 340


@dataclass
class Deployment:
    folder: Path
    brokers: int = 3
    spark_workers: int = 2
    ports: Ports = field(default_factory=lambda: Ports(24092))
    say: object = print
    latency_window_s: int = FULL.latency_window_s
    scheduled_data_quality: bool = FULL.scheduled_data_quality

    def __post_init__(self) -> None:
        self.folder = Path(self.folder).resolve()
        self.lab = Lab(self.folder / "lab")
        self.spark = SparkCluster(self.folder / "lab" / "spark")
        self.airflow = AirflowService(self.folder / "lab")
        self.config_file = self.folder / "kafka-dr.yaml"
        self.proxy: TcpProxy | None = None
        self.webhook: WebhookReceiver | None = None
        self.smtp: SmtpReceiver | None = None
        self.api: AirflowApi | None = None
        self.cfg: DrConfig | None = None

    # --- up ---------------------------------------------------------------------------

    def up(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.say(f"lab: 2 clusters of {self.brokers} brokers (west behind a proxy) in {self.lab.root}")
        self.say(f"spark: a master and {self.spark_workers} workers")
        # two cores a worker, as the lab's default: both continuous flows hold one core each for
        # as long as they run, and the data-quality job needs one more
        spark = SparkLayout(self.ports.spark, self.ports.spark_ui, workers=self.spark_workers, cores=2, memory="2g")
        with ThreadPoolExecutor(1) as pool:  # independent: each waits on its own JVMs meanwhile
            started = pool.submit(self.spark.up, spark)
            lab_config = self.lab.up(count=2, base_port=self.ports.base, proxied=(WEST,), brokers=self.brokers)
            layout = started.result()
        west = next(c for c in self.lab.clusters() if c.name == WEST)
        self.proxy = TcpProxy.for_cluster(west).start()
        point_lab_config(lab_config, layout.master_url)
        self.webhook, self.smtp = WebhookReceiver(), SmtpReceiver()
        doc = game_config(
            yaml.safe_load(lab_config.read_text()),
            self.webhook.url,
            self.smtp.port,
            GROUPS_REGEX,
            self.latency_window_s,
            self.scheduled_data_quality,
        )
        self.config_file.write_text(yaml.safe_dump(doc, sort_keys=False))
        self.cfg = load_config(self.config_file)
        self.say(f"airflow: api-server, scheduler, dag-processor, triggerer, Celery worker (port {self.ports.airflow})")
        spec = resolve_spec(
            None,
            self.airflow.lab_dir,
            self.config_file,
            self.folder / "airflow",
            self.ports.airflow,
            self.ports.postgres,
        )
        self.airflow.up(spec, self.cfg)
        self.api = AirflowApi(f"http://127.0.0.1:{spec.port}", *self._login(spec.home))

    def _login(self, home: str) -> tuple[str, str]:
        from kafka_dr.airflow.env import LAB_USER, passwords_file

        return LAB_USER, json.loads(passwords_file(Path(home)).read_text())[LAB_USER]

    def enable_dags(self, which=lambda dag_id: True, timeout: float = 300.0) -> list[str]:
        """Unpause the kafka-dr DAGs ``which`` selects, as an operator does in the UI, once the
        dag-processor has parsed them all (:meth:`dag_ids`)."""
        assert self.api is not None
        wanted = self.dag_ids()
        deadline = time.monotonic() + timeout
        while not wanted <= set(seen := self.api.dag_ids("dr_")):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"Airflow did not list the DAGs {sorted(wanted - set(seen))} within {timeout:.0f}s")
            time.sleep(1)
        chosen = [dag_id for dag_id in seen if which(dag_id)]
        for dag_id in chosen:
            self.api.unpause(dag_id)
        return chosen

    def dag_ids(self) -> set[str]:
        """Every DAG the shipped DAG files define for this config: one per file, named as the
        file, and the replication file's one per flow."""
        assert self.cfg is not None
        files = {f.stem for f in folder("dags").glob("dr_*.py")}
        return (files - {REPLICATION_FILE}) | {replication_dag_id(f.name) for f in self.cfg.flows}

    # --- down -------------------------------------------------------------------------

    def down(self) -> None:
        """Stop everything, keep every log and data folder."""
        for stop in (self.airflow.down, self.spark.down, lambda: self.lab.down(wipe=False)):
            try:
                stop()
            except Exception as e:  # noqa: BLE001 - stop the rest anyway
                self.say(f"stopping: {e}")
        for closable in (self.proxy, self.webhook, self.smtp):
            if closable is not None:
                closable.close()
