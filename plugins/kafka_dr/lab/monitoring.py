"""The lab's monitoring: a Prometheus and an Alertmanager of its own, on loopback.

A deployment alerts through Prometheus rules and Alertmanager routes: the lab runs the same
two programs, so a rule is seen firing against the real exporter. All under ``<lab>/monitoring``::

    monitoring.json                    the ports, each process's pid and start time
    prometheus.yml                     scrape job, rule files, the Alertmanager to alert
    alertmanager.yml                   one route: to the webhook, or to no receiver
    prometheus-data/                   Prometheus's TSDB
    alertmanager-data/                 silences and notification log: kept over restarts, so an
                                       alert already sent is not sent again before repeat_interval
    prometheus.log, alertmanager.log   each process's output

The programs are Debian's (``prometheus``, ``promtool``, ``prometheus-alertmanager``), on
127.0.0.1 only; Alertmanager's cluster listener is off (it would gossip on 0.0.0.0:9094, one
port for every lab). promtool checks the config and every rule file before anything starts: a
bad rule is one line of error, not a Prometheus that exits. ``up`` is idempotent: a running
process reloads its new config (``POST /-/reload``), a stopped one is started. A process is
signalled only when ``/proc`` shows its recorded start time and a command line naming this
folder's config, so a recycled pid is never touched.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

from kafka_dr.lab.postgres import port_in_use
from kafka_dr.lab.processes import is_ours, proc_state, stop_session
from kafka_dr.lab.records import read_record, write_record

#: The scrape job of kafka-dr's exporter; rules select its series with ``job="kafka-dr-exporter"``.
EXPORTER_JOB = "kafka-dr-exporter"
#: Started in this order (Prometheus alerts to Alertmanager), stopped in the reverse one.
SERVICES = ("alertmanager", "prometheus")
#: Each program's name on PATH; Debian names Alertmanager's after its package.
BINARIES = {"prometheus": "prometheus", "promtool": "promtool", "alertmanager": "prometheus-alertmanager"}
#: How soon Prometheus sends a firing alert to Alertmanager again (its default: 1 min). Alerts of
#: the first evaluations are dropped while Alertmanager is not yet discovered (discovery reports
#: at most every 5 s): the lab resends soon, so an alert arrives seconds after start-up.
RESEND_DELAY = "2s"
INSTALL_HINT = "install Debian's prometheus and prometheus-alertmanager (make debian-packages does)"


class MonitoringError(RuntimeError):
    """Prometheus or Alertmanager could not be checked, started, reloaded or asked."""


def prometheus_config(
    scrape_targets: list[str], rule_files: list[str], alertmanager: str, scrape_interval: str, evaluation_interval: str
) -> dict:
    """Prometheus's config: one scrape job (:data:`EXPORTER_JOB`) over ``scrape_targets``, the
    ``rule_files`` evaluated every ``evaluation_interval``, their alerts sent to ``alertmanager``.

    :param scrape_targets: the exporters' ``host:port``.
    :param rule_files: paths (or globs) of rule files, as Prometheus reads them.
    :param alertmanager: the Alertmanager's ``host:port``.
    """
    return {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": evaluation_interval},
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "rule_files": list(rule_files),
        "scrape_configs": [{"job_name": EXPORTER_JOB, "static_configs": [{"targets": list(scrape_targets)}]}],
    }


def alertmanager_config(webhook_url: str | None) -> dict:
    """Alertmanager's config: every alert to ``webhook_url`` (resolutions too), grouped per alert
    and flow; without a URL to a receiver that sends nothing (the alerts show in the UI only)."""
    receiver = {"name": "none"}
    if webhook_url:
        receiver = {"name": "webhook", "webhook_configs": [{"url": webhook_url, "send_resolved": True}]}
    # short waits: the lab is for seeing an alert arrive seconds after its rule fires; a
    # deployment keeps Alertmanager's defaults (30 s, 5 min), which batch a flapping fleet
    waits = {"group_wait": "1s", "group_interval": "5s", "repeat_interval": "1h"}
    return {
        "route": {"receiver": receiver["name"], "group_by": ["alertname", "flow"], **waits},
        "receivers": [receiver],
    }


def binaries() -> dict[str, str]:
    """The programs' paths by role (``prometheus``, ``promtool``, ``alertmanager``).

    :raises MonitoringError: one is not on PATH.
    """
    found = {role: shutil.which(name) for role, name in BINARIES.items()}
    missing = [BINARIES[role] for role, path in found.items() if path is None]
    if missing:
        raise MonitoringError(f"{missing[0]} was not found on PATH: {INSTALL_HINT}")
    return found


def promtool_reason(output: str) -> str:
    """promtool's complaints on one line: its ``FAILED:`` lines and their indented reasons (which
    name the file), each once (it repeats a rule file's YAML error)."""
    reasons: list[str] = []
    for line in output.splitlines():
        text = line.strip().removeprefix("FAILED:").strip()
        if text and text not in reasons and not text.startswith(("Checking ", "SUCCESS:")):
            reasons.append(text)
    return "; ".join(reasons) or "no reason given"


class Monitoring:
    """The lab's Prometheus on ``prometheus_port`` and Alertmanager on ``alertmanager_port``,
    their files under ``root`` (see the module docstring)."""

    def __init__(self, root: Path, prometheus_port: int, alertmanager_port: int) -> None:
        self.root = Path(root).resolve()
        self.ports = {"prometheus": prometheus_port, "alertmanager": alertmanager_port}
        self.state_file = self.root / "monitoring.json"

    @property
    def prometheus_url(self) -> str:
        return self.url("prometheus")

    @property
    def alertmanager_url(self) -> str:
        return self.url("alertmanager")

    def url(self, service: str) -> str:
        return f"http://127.0.0.1:{self.ports[service]}"

    def config_file(self, service: str) -> Path:
        return self.root / f"{service}.yml"

    # --- lifecycle ---------------------------------------------------------------------

    def up(
        self,
        scrape_targets: list[str],
        rule_files: list[str | Path],
        webhook_url: str | None = None,
        scrape_interval: str = "2s",
        evaluation_interval: str = "2s",
        timeout: float = 60.0,
    ) -> None:
        """Write both configs, check them with promtool, then start what is not running and reload
        what is; return once both answer ``/-/ready``.

        :param scrape_targets: the exporters' ``host:port``, scraped as :data:`EXPORTER_JOB`.
        :param rule_files: Prometheus rule files (relative paths are the caller's).
        :param webhook_url: where Alertmanager posts its notifications; None: nowhere.
        :raises MonitoringError: a program is missing, promtool refuses a file, a port is taken, a
            reload is refused, a service is not ready in ``timeout`` seconds.
        """
        bins = binaries()  # before anything is written
        state = self._load()
        running = {s: e for s, e in (state.get("processes") or {}).items() if self._is_ours(s, e)}
        if running and state.get("ports") != self.ports:
            raise MonitoringError(
                f"the lab's monitoring in {self.root} runs on ports {state.get('ports')}; stop it (down) first"
            )
        for service in SERVICES:
            if service not in running and port_in_use(self.ports[service]):
                raise MonitoringError(f"port {self.ports[service]} on 127.0.0.1 is already in use ({service})")
        self.root.mkdir(parents=True, exist_ok=True)
        rules = [str(Path(r).resolve()) for r in rule_files]  # Prometheus runs in root
        alertmanager = f"127.0.0.1:{self.ports['alertmanager']}"
        # checked under another name: a rejected config never replaces the one a process runs with
        candidate = self.root / "prometheus.yml.new"
        _write_yaml(
            candidate, prometheus_config(scrape_targets, rules, alertmanager, scrape_interval, evaluation_interval)
        )
        check = subprocess.run(
            [bins["promtool"], "check", "config", str(candidate)], capture_output=True, text=True, check=False
        )
        if check.returncode:  # the candidate stays, for a look at what was refused
            raise MonitoringError(
                f"promtool check config refused the lab's monitoring: {promtool_reason(check.stdout + check.stderr)}"
            )
        candidate.replace(self.config_file("prometheus"))
        _write_yaml(self.config_file("alertmanager"), alertmanager_config(webhook_url))
        self._save({"ports": self.ports, "processes": running})
        for service in SERVICES:
            if service in running:
                self._reload(service)
            else:
                running[service] = self._start(service, bins[service])
                self._save({"ports": self.ports, "processes": running})
        self._wait_ready(timeout)

    def down(self) -> None:
        """Stop both (SIGTERM, then SIGKILL after 10 s) and forget them; nothing running is fine."""
        state = self._load()
        processes = state.get("processes") or {}
        for service in reversed(SERVICES):
            if self._is_ours(service, entry := processes.get(service)):
                stop_session(entry["pid"], timeout=10.0)  # the session it leads: it alone
        if state:
            self._save({**state, "processes": {}})

    def running(self) -> bool:
        """Whether both processes run as recorded."""
        processes = self._load().get("processes") or {}
        return all(self._is_ours(s, processes.get(s)) for s in SERVICES)

    # --- Prometheus's HTTP API -----------------------------------------------------------

    def query(self, expr: str) -> list[dict]:
        """The instant vector of ``expr`` now (``/api/v1/query``): ``[{"metric": ..., "value": [t, "v"]}]``."""
        return self._api("/api/v1/query", {"query": expr})["result"]

    def alerts(self) -> list[dict]:
        """The alerts pending or firing (``/api/v1/alerts``)."""
        return self._api("/api/v1/alerts")["alerts"]

    def rules(self) -> list[dict]:
        """The rule groups Prometheus evaluates, with each rule's state (``/api/v1/rules``)."""
        return self._api("/api/v1/rules")["groups"]

    # --- internals ---------------------------------------------------------------------

    def _api(self, path: str, params: dict[str, str] | None = None) -> dict:
        url = f"{self.prometheus_url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        answer = _http(url)
        try:  # Prometheus answers a refused query with its JSON too, and a 4xx status
            doc = json.loads(answer[1]) if answer else {"error": "no answer"}
        except ValueError:
            doc = {"error": f"HTTP {answer[0]}"}
        if doc.get("status") != "success":
            raise MonitoringError(f"Prometheus at {self.prometheus_url} refused {path}: {doc.get('error')}")
        return doc["data"]

    def _argv(self, service: str, binary: str) -> list[str]:
        argv = [binary, f"--config.file={self.config_file(service)}"]
        # the external URL is what alerts link to: the loopback address it answers on, not the host's name
        argv += [f"--web.listen-address=127.0.0.1:{self.ports[service]}", f"--web.external-url={self.url(service)}"]
        if service == "alertmanager":  # an empty cluster address turns gossip off: no port 9094
            return [*argv, f"--storage.path={self.root / 'alertmanager-data'}", "--cluster.listen-address="]
        argv += [f"--storage.tsdb.path={self.root / 'prometheus-data'}", "--web.enable-lifecycle"]
        return [*argv, f"--rules.alert.resend-delay={RESEND_DELAY}"]

    def _start(self, service: str, binary: str) -> dict:
        log = self.root / f"{service}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                self._argv(service, binary),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # outlives the caller, as the lab's other services do
                cwd=self.root,
            )
        seen = proc_state(proc.pid)
        if seen is None:
            raise MonitoringError(f"the lab's {service} exited at once; last output of {log}:\n{_tail(log)}")
        return {"pid": proc.pid, "start": seen[0]}

    def _reload(self, service: str) -> None:
        """``POST /-/reload``: the process reads its config file again; one it refuses is in the answer."""
        answer = _http(f"{self.url(service)}/-/reload", method="POST", timeout=30.0)
        if answer is None or answer[0] != 200:
            reason = answer[1].decode(errors="replace").strip() if answer else "no answer"
            raise MonitoringError(f"the lab's {service} at {self.url(service)} did not reload: {reason}")

    def _wait_ready(self, timeout: float) -> None:
        """Until both answer ``GET /-/ready`` with 200 (Prometheus: 503 until its TSDB is open);
        a process that exits meanwhile ends the wait."""
        deadline = time.monotonic() + timeout
        waiting = list(SERVICES)
        while waiting:
            processes = self._load().get("processes") or {}
            for service in list(waiting):
                gone = not self._is_ours(service, processes.get(service))
                if not gone and (_http(f"{self.url(service)}/-/ready", timeout=2.0) or (0,))[0] == 200:
                    waiting.remove(service)
                elif gone or time.monotonic() >= deadline:
                    why = "exited during start-up" if gone else f"was not ready within {timeout:.0f} s"
                    log = self.root / f"{service}.log"
                    raise MonitoringError(
                        f"the lab's {service} at {self.url(service)} {why}; last output of {log}:\n{_tail(log)}"
                    )
            if waiting:
                time.sleep(0.2)

    def _is_ours(self, service: str, entry: dict | None) -> bool:
        """Whether a recorded process still runs: same pid, same start time, this folder's config
        on its command line (read again while a just-started one still shows the parent's)."""
        return is_ours(entry, str(self.config_file(service)))

    def _load(self) -> dict:
        return read_record(self.state_file)

    def _save(self, state: dict) -> None:
        write_record(self.state_file, state)


def _write_yaml(path: Path, doc: dict) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _http(url: str, method: str = "GET", timeout: float = 10.0) -> tuple[int, bytes] | None:
    """A request's status and body (an error status's too), or None when nothing answers."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return None


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-1500:] if log.exists() else ""
