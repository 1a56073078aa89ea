"""The lab's Airflow asks for a login; its password is generated once, kept private."""

import json
import stat

from kafka_dr.airflow.env import LAB_USER, ensure_login, login_env


def test_password_is_generated_once_and_only_the_owner_can_read_it(tmp_path):
    path = ensure_login(tmp_path)
    first = json.loads(path.read_text())[LAB_USER]
    assert len(first) >= 16 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(ensure_login(tmp_path).read_text())[LAB_USER] == first  # stable across calls
    ensure_login(tmp_path, "second")
    assert set(json.loads(path.read_text())) == {LAB_USER, "second"}


def test_login_env_configures_simple_auth_manager_without_open_access(tmp_path):
    env = login_env(tmp_path)
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == f"{LAB_USER}:admin"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] == "False"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == str(
        tmp_path.resolve() / "simple_auth_manager_passwords.json"
    )
    assert not any(
        "password" in v.lower() and v != env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] for v in env.values()
    )
