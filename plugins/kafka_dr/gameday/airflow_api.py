"""Airflow's REST API as an operator's script uses it: sign in, unpause, trigger with a form's
values, wait for the run, read a task's XCom.

The game day drives Airflow only through this API (never through Airflow's Python modules),
so what it proves is what a runbook script or an incident bot gets.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import datetime

DONE = ("success", "failed")
#: a trigger's answer lost to a busy api-server (its timeout, a 5xx) is asked again this often
TRIGGER_ATTEMPTS, TRIGGER_RETRY_S = 4, 5.0


class AirflowApiError(RuntimeError):
    pass


@dataclass
class AirflowApi:
    """One signed-in session; the token is fetched again when Airflow answers 401."""

    base: str
    user: str
    password: str
    timeout: float = 30.0
    _token: str | None = field(default=None, repr=False)

    def _sign_in(self) -> str:
        body = json.dumps({"username": self.user, "password": self.password}).encode()
        req = urllib.request.Request(f"{self.base}/auth/token", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=self.timeout) as r:
            return json.loads(r.read())["access_token"]

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        for attempt in (1, 2):
            self._token = self._token or self._sign_in()
            req = urllib.request.Request(
                f"{self.base}{path}",
                method=method,
                data=None if body is None else json.dumps(body).encode(),
                headers={"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    raw = r.read()
                    return json.loads(raw) if raw else {}
            except urllib.error.HTTPError as e:
                if e.code == 401 and attempt == 1:
                    self._token = None
                    continue
                detail = e.read().decode(errors="replace")[:500]
                raise AirflowApiError(f"{method} {path}: HTTP {e.code}: {detail}") from e
        raise AirflowApiError(f"{method} {path}: not signed in")

    def get(self, path: str) -> dict:
        return self.call("GET", path)

    # --- DAGs and runs -------------------------------------------------------------------

    def dag_ids(self, prefix: str = "dr_") -> list[str]:
        dags = self.get("/api/v2/dags?limit=100").get("dags", [])
        return sorted(d["dag_id"] for d in dags if d["dag_id"].startswith(prefix))

    def unpause(self, dag_id: str) -> None:
        self.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})

    def trigger(self, dag_id: str, conf: dict, attempts: int = TRIGGER_ATTEMPTS) -> str:
        """Trigger like the UI's form does: a manual run now with ``conf``; returns the run id.
        The run id is chosen here, so a trigger whose answer was lost (an api-server too busy to
        answer in time) is sent again safely: Airflow refuses a second run of that id (409)."""
        run_id = f"manual__gameday_{uuid.uuid4().hex[:12]}"
        body = {"dag_run_id": run_id, "logical_date": None, "conf": conf}
        for attempt in range(1, attempts + 1):
            try:
                return self.call("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)["dag_run_id"]
            except AirflowApiError as e:
                if "HTTP 409" in str(e) and attempt > 1:
                    return run_id  # the lost answer's run
                if attempt == attempts or "HTTP 5" not in str(e):
                    raise
            except OSError:
                if attempt == attempts:
                    raise
            time.sleep(TRIGGER_RETRY_S)
        raise AssertionError("unreachable")

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.get(f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}")

    def scheduler_heartbeat(self) -> float | None:
        """When a scheduler last heartbeated (epoch seconds; None: never, or unknown)."""
        at = self.get("/api/v2/monitor/health").get("scheduler", {}).get("latest_scheduler_heartbeat")
        return datetime.fromisoformat(at).timestamp() if at else None

    def runs(self, dag_id: str, limit: int = 20) -> list[dict]:
        return self.get(f"/api/v2/dags/{dag_id}/dagRuns?limit={limit}&order_by=-start_date").get("dag_runs", [])

    def wait_run(self, dag_id: str, run_id: str, timeout: float, every: float = 0.5) -> dict:
        """The run once it is done, asked every ``every`` seconds (an operator's automation
        watching for it: the RTO counts the wait)."""
        deadline = time.monotonic() + timeout
        last: dict = {}
        while time.monotonic() < deadline:
            try:
                last = self.run(dag_id, run_id)
            except (OSError, AirflowApiError):
                pass  # a busy or restarting api-server: ask again
            if last.get("state") in DONE:
                return last
            time.sleep(every)
        raise AirflowApiError(f"{dag_id} run {run_id} did not finish within {timeout:.0f}s (state {last.get('state')})")

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value"):
        q = urllib.parse.quote(run_id, safe="")
        entry = self.get(f"/api/v2/dags/{dag_id}/dagRuns/{q}/taskInstances/{task_id}/xcomEntries/{key}")
        return entry.get("value")

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        q = urllib.parse.quote(run_id, safe="")
        tis = self.get(f"/api/v2/dags/{dag_id}/dagRuns/{q}/taskInstances?limit=100").get("task_instances", [])
        return {t["task_id"]: t["state"] for t in tis}
