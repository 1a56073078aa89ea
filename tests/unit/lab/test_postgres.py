"""The lab's PostgreSQL without starting it: whom its programs run as, how the server listens,
and the URL Airflow gets (tests/e2e/test_operator_ui.py runs it)."""

from __future__ import annotations

from kafka_dr.lab.postgres import SUPERUSER, database_url, run_as_prefix, server_options


def test_root_runs_the_server_as_the_postgres_user_and_anyone_else_as_themselves():
    assert run_as_prefix(uid=0) == ["runuser", "-u", "postgres", "--"]
    assert run_as_prefix(uid=1000) == []


def test_the_server_listens_on_loopback_on_the_labs_port_with_its_socket_in_the_lab(tmp_path):
    assert server_options(45432, tmp_path / "run") == f"-c listen_addresses=127.0.0.1 -p 45432 -k {tmp_path / 'run'}"


def test_airflow_reaches_its_database_through_psycopg2_on_loopback():
    assert database_url(45432, "pw") == f"postgresql+psycopg2://{SUPERUSER}:pw@127.0.0.1:45432/airflow"
