"""The operator's view, in a real browser: log in, read the DR status page (its data-quality
panel showing a real ``dr_data_quality`` run's result and Data Docs), lose a cluster, fail over
for real from the trigger form, read the run's summary and the new active cluster.

Real parts only: the lab's Kafka clusters, replication run by Spark, Airflow as the product
runs it (``kafka-dr airflow up`` as a user types it: api-server, scheduler, dag-processor and
triggerer and a Celery worker on a PostgreSQL and a Redis of its own, on private ports), Debian's
Chromium driven through Selenium and the system chromedriver. Screenshots land in
``.lab-test-ui/screenshots/`` (the docs' ones in ``docs/screenshots/`` are copies of these);
the service's logs in ``.lab-test-ui/airflow/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from kafka_dr.gameday.airflow_api import AirflowApi

pytestmark = [pytest.mark.lab, pytest.mark.airflow, pytest.mark.e2e]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
PORT = int(os.environ.get("KAFKA_DR_TEST_AIRFLOW_PORT", "28080"))
DB_PORT = int(os.environ.get("KAFKA_DR_TEST_POSTGRES_PORT", "28432"))
#: Outside the lab folder (the lab is wiped at the end of the session): the Airflow service's
#: folder (its home and logs, its PostgreSQL) and the screenshots stay for reading after a run.
ARTIFACTS = Path(os.environ.get("KAFKA_DR_TEST_UI_DIR", Path(__file__).resolve().parents[2] / ".lab-test-ui"))
KAFKA_DR = str(Path(sys.executable).with_name("kafka-dr"))


def kafka_dr(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([KAFKA_DR, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def airflow_service(folder: Path, config: Path):
    """``kafka-dr airflow up`` on the test's ports, as a user types it; its printed password
    command is what the test signs in with. Yields ``(base_url, password)``; ``down`` at the end,
    on failure too, must stop every process and PostgreSQL."""
    kafka_dr("airflow", "down", "--dir", folder)  # what a crashed earlier run left running
    shutil.rmtree(folder, ignore_errors=True)
    up = kafka_dr(
        "airflow", "up", "--dir", folder, "--config", config, "--port", PORT, "--db-port", DB_PORT, timeout=600
    )
    out = f"--- stdout\n{up.stdout[-4000:]}\n--- stderr\n{up.stderr[-4000:]}"
    try:
        assert up.returncode == 0, out
        base = f"http://127.0.0.1:{PORT}"
        assert f"Airflow healthy: {base}/" in up.stdout and "user:      operator" in up.stdout, out
        assert f"CeleryExecutor; metadata in PostgreSQL on 127.0.0.1:{DB_PORT}" in up.stdout, out
        read_password = re.search(r"^password:  (cat \S+)", up.stdout, re.M).group(1)
        printed = subprocess.run(["bash", "-c", read_password], capture_output=True, text=True, check=True).stdout
        status = kafka_dr("airflow", "status", "--dir", folder)
        assert status.returncode == 0, status.stdout + status.stderr
        assert re.search(r"^postgresql +\d+ +answering", status.stdout, re.M), status.stdout
        assert re.search(r"^redis +\d+ +answering", status.stdout, re.M), status.stdout
        yield base, json.loads(printed)["operator"]
    finally:
        down = kafka_dr("airflow", "down", "--dir", folder, timeout=180)
        assert down.returncode == 0 and "api-server, redis, postgresql)" in down.stdout, down.stdout + down.stderr


def dag_run_state_in_postgres(folder: Path, dag_id: str, run_id: str) -> str | None:
    """The run's state as the service's PostgreSQL holds it (the metadata is not in SQLite)."""
    import psycopg2

    from kafka_dr.lab.postgres import Postgres

    conn = psycopg2.connect(Postgres(folder / "postgres", DB_PORT).url.replace("postgresql+psycopg2", "postgresql"))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT state FROM dag_run WHERE dag_id = %s AND run_id = %s", (dag_id, run_id))
            row = cur.fetchone()
            return row[0] if row else None
    finally:
        conn.close()


@pytest.fixture
def browser():
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail(
            "Debian's chromium and chromium-driver are needed "
            "(.ci/run installs them: apt-get install chromium chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--disable-gpu",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def shoot(driver, folder: Path, name: str, full_page: bool = True) -> Path:
    """A PNG of the page: the whole document (Chromium's DevTools capture) or the window."""
    import base64

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    if full_page:
        size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        shot = driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            },
        )
        path.write_bytes(base64.b64decode(shot["data"]))
    else:
        driver.save_screenshot(str(path))
    return path


def api_token(base: str, user: str, password: str) -> str:
    req = urllib.request.Request(
        f"{base}/auth/token",
        data=json.dumps({"username": user, "password": password}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["access_token"]


def api_get(base: str, token: str, path: str) -> dict | None:
    """GET from Airflow's REST API; ``None`` when it is too busy to answer in time (polls retry)."""
    req = urllib.request.Request(f"{base}{path}", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())
    except TimeoutError:
        return None


def wait_for(what: str, fn, timeout: float = 120.0, every: float = 1.0):
    """Poll ``fn`` until it returns something truthy; fail naming ``what`` (and the last value)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    pytest.fail(f"{what}: not reached within {timeout:.0f}s (last: {last!r})")


def ui_config(lab, folder: Path, topic: str) -> Path:
    """The lab's config for a UI session: flows copy only ``topic`` and run when asked
    (incremental, no schedule), so the scheduler starts no streaming job of its own."""
    doc = yaml.safe_load(lab.config_file.read_text())
    for f in doc["flows"]:
        f.update({"topics": {"allow": [topic]}, "mode": "incremental", "schedule": "none"})
    # thresholds with room for a loaded CI machine (Airflow's start-up, Spark's): the judgement
    # itself is unit tested; here the page must show the figures
    doc.setdefault("thresholds", {}).update({"heartbeat_max_age_seconds": 900, "latency_p99_max_seconds": 900})
    # the real failover records "east is failed" under a prefix of its own: the session's other
    # tests, on the lab's prefix, keep replicating
    doc["internal_prefix"] = "_kdr_ui_" + topic.replace(".", "_")[-30:]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "kafka-dr.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def login(driver, base: str, user: str, password: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{base}/dr-status/")  # not logged in: the page sends us to Airflow's login
    WebDriverWait(driver, 60).until(EC.presence_of_element_located((By.NAME, "username")))
    assert "/auth/login" in driver.current_url, driver.current_url
    driver.find_element(By.NAME, "username").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(driver, 60).until(lambda d: "/auth/login" not in d.current_url)


def open_status(driver, base: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{base}/dr-status/")
    WebDriverWait(driver, 60).until(EC.presence_of_element_located((By.ID, "banner")))
    return driver.find_element(By.ID, "banner")


def test_operator_logs_in_reads_status_and_fails_over_from_the_form(lab, spark, browser, topic_name):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from kafka_dr.airflow.env import LAB_USER
    from kafka_dr.core.config_load import load_config
    from kafka_dr.kafka import clients
    from kafka_dr.kafka.heartbeats import emit
    from kafka_dr.kafka.topics import ensure_topic
    from kafka_dr.kafka.writing import produce_all
    from kafka_dr.spark.job import JobOptions, run_flow

    shots = ARTIFACTS / "screenshots"
    shutil.rmtree(shots, ignore_errors=True)
    service = ARTIFACTS / "service"
    home = service / "airflow"
    config = ui_config(lab, ARTIFACTS, topic_name)
    cfg = load_config(config)

    # Real replication first: records and heartbeats cross both flows, the job publishes metrics.
    for c in cfg.clusters.values():
        ensure_topic(clients.admin(c), topic_name, partitions=2)
    for name, n in (("east", 300), ("west", 100)):  # fresh timestamps: the batch latency is the real one
        rows = [
            (f"{name}-{i}".encode(), f"order {i} from {name}".encode(), [("app", name.encode())], None, i % 2)
            for i in range(n)
        ]
        produce_all(clients.producer(cfg.cluster(name)), topic_name, rows)
    for name in cfg.clusters:
        emit(cfg, name)
    for f in cfg.flows:
        run_flow(JobOptions(config=str(config), flow=f.name, mode="incremental"), spark=spark)

    with airflow_service(service, config) as (base, pw):
        driver = browser
        east_stopped = False
        try:
            # 0. A real dr_data_quality run, by the service's scheduler: the page shows what it published.
            api = AirflowApi(base, LAB_USER, pw)
            wait_for("the dag-processor to list dr_data_quality", lambda: "dr_data_quality" in api.dag_ids(), 300, 2)
            api.unpause("dr_data_quality")  # a scheduled DAG starts paused: the operator turns it on
            dq_run = api.wait_run("dr_data_quality", api.trigger("dr_data_quality", {}), 600)
            assert dq_run["state"] == "success", f"dr_data_quality ended {dq_run['state']}; logs under {home / 'logs'}"
            dq = api.xcom("dr_data_quality", dq_run["dag_run_id"], "validate")
            assert dq["success"] is True and dq["checked_partitions"] >= 4 and Path(dq["docs_path"]).is_file(), dq

            # 1. The status page is behind Airflow's login.
            login(driver, base, LAB_USER, pw)
            banner = open_status(driver, base)
            assert driver.find_element(By.ID, "active-cluster").text == "east"
            assert banner.get_attribute("data-overall") == "ok", driver.find_element(By.ID, "alerts").text
            for name in ("east", "west"):
                card = driver.find_element(By.CSS_SELECTOR, f".card[data-cluster={name}]")
                assert "UP" in card.text and cfg.cluster(name).cluster_id in card.text
            for f in cfg.flows:
                row = driver.find_element(By.CSS_SELECTOR, f"tr[data-flow={f.name}]")
                assert "OK" in row.text, row.text
                latency = row.find_element(By.CSS_SELECTOR, "td.latency").text
                assert latency.split(" s")[0].replace(".", "").isdigit(), latency  # heartbeat age in seconds
                assert row.find_element(By.CSS_SELECTOR, "td.lag").text == "0"  # everything copied
            assert driver.find_elements(By.CSS_SELECTOR, "#latency-chart svg polyline, #latency-chart svg circle")
            dq_text = driver.find_element(By.ID, "data-quality").text
            assert dq["run_id"] in dq_text and "PASSED" in dq_text, dq_text
            assert f"{dq['checked_partitions']} partition(s) checked" in dq_text, dq_text
            shoot(driver, shots, "01-status-healthy")
            docs = driver.find_element(By.LINK_TEXT, "open Data Docs").get_attribute("href")  # opens a new tab
            assert "/dr-status/data-docs/" in docs, docs
            driver.get(docs)  # the run's own Great Expectations Data Docs, served from its docs_path folder
            assert "Great Expectations" in driver.title, driver.title

            # The navigation entry shows the page inside Airflow's UI.
            driver.get(f"{base}/plugin/dr-status")
            WebDriverWait(driver, 60).until(EC.presence_of_element_located((By.CSS_SELECTOR, "iframe")))
            time.sleep(2)  # let the frame paint before the screenshot (nothing is asserted on time)
            shoot(driver, shots, "02-status-in-airflow-nav", full_page=False)

            # 2. east goes down: the page still renders, says so first, and names the way out.
            lab.stop("east")
            east_stopped = True
            started = time.monotonic()
            banner = open_status(driver, base)
            render_seconds = time.monotonic() - started
            alerts = driver.find_element(By.ID, "alerts").text
            assert banner.get_attribute("data-overall") == "critical"
            assert "cluster east" in alerts and "unreachable" in alerts and "ACTIVE cluster east" in alerts, alerts
            assert "DOWN" in driver.find_element(By.CSS_SELECTOR, ".card[data-cluster=east]").text
            print(f"status page with east down rendered in {render_seconds:.1f}s")
            shoot(driver, shots, "03-status-east-down")

            # 3. Fail over from the trigger form: east -> west for real (the dry-run switch starts on: off).
            driver.get(f"{base}/dags/dr_failover")
            WebDriverWait(driver, 60).until(
                EC.element_to_be_clickable((By.CSS_SELECTOR, "button[aria-label='Trigger Dag']"))
            ).click()
            form = WebDriverWait(driver, 30).until(
                EC.presence_of_element_located((By.CSS_SELECTOR, "[data-testid=config-form]"))
            )
            form.find_element(By.CSS_SELECTOR, "button[id$=':trigger:Clusters']").click()
            for field, value in (("failed_cluster", "east"), ("surviving_cluster", "west")):
                box = WebDriverWait(driver, 30).until(
                    EC.element_to_be_clickable((By.CSS_SELECTOR, f"#element_{field} input[type=text]"))
                )
                box.send_keys(value)
                box.send_keys(Keys.ENTER)
                assert driver.find_element(By.NAME, f"element_{field}").get_attribute("value") == value
            shoot(driver, shots, "04-failover-form-clusters", full_page=False)
            form.find_element(By.CSS_SELECTOR, "button[id$=':trigger:Safety']").click()
            dry = WebDriverWait(driver, 30).until(EC.presence_of_element_located((By.NAME, "element_dry_run")))
            assert dry.is_selected(), "the dry-run switch must start on"
            switch = dry.find_element(By.XPATH, "./ancestor::label[1]")  # the dialog's footer may overlay it
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", switch)
            assert not dry.is_selected(), "the dry-run switch did not turn off"
            shoot(driver, shots, "05-failover-form-safety", full_page=False)
            driver.find_element(By.XPATH, "//div[@role='dialog']//button[normalize-space()='Trigger']").click()

            token = api_token(base, LAB_USER, pw)
            run = wait_for(
                "a dr_failover run",
                lambda: (
                    (api_get(base, token, "/api/v2/dags/dr_failover/dagRuns?limit=1") or {}).get("dag_runs") or [None]
                )[0],
                60,
            )
            assert (
                run["conf"]["failed_cluster"] == "east"
                and run["conf"]["surviving_cluster"] == "west"
                and run["conf"]["dry_run"] is False
            )
            run_id = run["dag_run_id"]
            done = wait_for(
                "the dr_failover run to finish",
                lambda: (lambda r: r if r and r["state"] in ("success", "failed") else None)(
                    api_get(base, token, f"/api/v2/dags/dr_failover/dagRuns/{run_id}")
                ),
                300,
                2,
            )
            assert done["state"] == "success", f"dr_failover {run_id} ended {done['state']}; logs under {home / 'logs'}"
            # queued by the service's scheduler to its Celery worker, recorded in its PostgreSQL
            assert dag_run_state_in_postgres(service, "dr_failover", run_id) == "success"
            assert "executor=CeleryExecutor" in (home / "scheduler.log").read_text(errors="replace")

            # 4. The summary is readable in the UI: the summary task's XCom, and the status page.
            quoted = urllib.request.quote(run_id, safe="")
            xcom = api_get(
                base, token, f"/api/v2/dags/dr_failover/dagRuns/{quoted}/taskInstances/summary/xcomEntries/return_value"
            )
            text = (
                (xcom or {}).get("value", {}).get("summary_text", "")
                if isinstance((xcom or {}).get("value"), dict)
                else str((xcom or {}).get("value"))
            )
            assert "failover east -> west" in text and "DRY RUN" not in text, xcom
            driver.get(f"{base}/dags/dr_failover/runs/{quoted}/tasks/summary/xcom")
            key = WebDriverWait(driver, 60).until(
                EC.presence_of_element_located((By.XPATH, "//td[normalize-space()='summary_text']"))
            )
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", key)
            time.sleep(2)  # let the value's viewer paint before the screenshot (nothing is asserted on time)
            assert "failover east -> west" in key.find_element(By.XPATH, "./ancestor::tr").text
            shoot(driver, shots, "06-failover-summary-xcom", full_page=False)
            open_status(driver, base)
            ops = driver.find_element(By.ID, "operations").text
            assert run_id in ops and "failover east -> west" in ops and "DRY RUN" not in ops, ops
            assert driver.find_element(By.ID, "active-cluster").text == "west"  # the page reads the recorded state
            shoot(driver, shots, "07-status-after-failover")
            # and the state as the clusters hold it, read here
            from kafka_dr.kafka.state_store import read_state

            state = read_state(cfg, skip=("east",))
            assert (state.active_cluster, state.failed_clusters) == ("west", ("east",)), state
        finally:
            if east_stopped:
                lab.start("east")
