"""Secret references and masking."""

from __future__ import annotations

import pytest

from kafka_dr.core.secret_refs import (
    MASK,
    Secret,
    SecretRef,
    UnresolvedSecret,
    env_resolver,
    is_secret_key,
    mask_config,
    parse_ref,
)


@pytest.mark.parametrize(
    "value, ref",
    [
        ("${env:KAFKA_PASSWORD}", SecretRef("env", "KAFKA_PASSWORD")),
        ("  ${env:KAFKA_PASSWORD}  ", SecretRef("env", "KAFKA_PASSWORD")),
        ("${env: SPACED }", SecretRef("env", "SPACED")),
        ("${airflow:kafka_east}", SecretRef("airflow", "kafka_east")),
        ("${airflow:kafka_east.login}", SecretRef("airflow", "kafka_east.login")),
        ("${airflow:kafka_east.extra.sasl_password}", SecretRef("airflow", "kafka_east.extra.sasl_password")),
    ],
)
def test_parse_ref(value, ref):
    assert parse_ref(value) == ref


@pytest.mark.parametrize(
    "value",
    [
        "hunter2",
        "${vault:x}",
        "${ENV:X}",
        "${env:}",
        "${env:X",
        "$env:X",
        "pre${env:X}",
        "${env:X}post",
        "${env:X}${env:Y}",
        None,
        42,
        ["${env:X}"],
    ],
)
def test_not_a_ref(value):
    assert parse_ref(value) is None


def test_ref_prints_as_written():
    assert str(SecretRef("env", "X")) == "${env:X}"
    assert str(SecretRef("airflow", "conn.extra.k")) == "${airflow:conn.extra.k}"


def test_env_resolver():
    resolve = env_resolver({"KAFKA_PASSWORD": "s3cret"})
    assert resolve(SecretRef("env", "KAFKA_PASSWORD")) == "s3cret"


def test_env_resolver_defaults_to_the_process_environment(monkeypatch):
    monkeypatch.setenv("KAFKA_DR_TEST_SECRET", "from-env")
    assert env_resolver()(SecretRef("env", "KAFKA_DR_TEST_SECRET")) == "from-env"


def test_missing_variable_names_the_variable_not_a_value():
    resolve = env_resolver({"OTHER": "other-s3cret"})
    with pytest.raises(UnresolvedSecret) as e:
        resolve(SecretRef("env", "KAFKA_PASSWORD"))
    assert isinstance(e.value, LookupError)
    assert str(e.value) == "${env:KAFKA_PASSWORD}: environment variable KAFKA_PASSWORD is not set"
    assert "other-s3cret" not in str(e.value)


def test_env_resolver_takes_airflow_refs_only_from_their_carrier_variable():
    from kafka_dr.core.secret_refs import ref_env_name

    ref = SecretRef("airflow", "kafka_east.extra.token")
    assert ref_env_name(ref) == "KAFKA_DR_SECRET_KAFKA_EAST_EXTRA_TOKEN"
    # a variable named like the connection id is not enough: only the carrier counts
    with pytest.raises(UnresolvedSecret, match=r"KAFKA_DR_SECRET_KAFKA_EAST_EXTRA_TOKEN"):
        env_resolver({"kafka_east": "x"})(ref)
    assert env_resolver({"KAFKA_DR_SECRET_KAFKA_EAST_EXTRA_TOKEN": "s3cret"})(ref) == "s3cret"


def test_secret_is_masked_when_printed():
    s = Secret("hunter2")
    assert s.reveal() == "hunter2"
    assert repr(s) == str(s) == f"Secret({MASK})"
    assert "hunter2" not in f"{s} {s!r} {[s]} { ({'k': s}) }"
    assert "hunter2" not in format(s)


def test_secret_equality_and_hash():
    assert Secret("a") == Secret("a") and Secret("a") != Secret("b")
    assert Secret("a") != "a"
    assert len({Secret("a"), Secret("a"), Secret("b")}) == 2


@pytest.mark.parametrize(
    "key, secret",
    [
        ("sasl.password", True),
        ("ssl.key.password", True),
        ("ssl.keystore.password", True),
        ("ssl.key.pem", True),
        ("sasl.oauthbearer.client.secret", True),
        ("basic.auth.user.info", True),
        ("password", True),
        ("custom.password", True),
        ("something.secret", True),
        ("sasl.username", False),
        ("security.protocol", False),
        ("ssl.ca.location", False),
    ],
)
def test_is_secret_key(key, secret):
    assert is_secret_key(key) is secret


def test_mask_config():
    conf = {
        "bootstrap.servers": "east:9092",
        "security.protocol": "SASL_SSL",
        "sasl.username": "dr",
        "sasl.password": "hunter2",
        "ssl.key.password": "k3y",
        "sasl.oauthbearer.client.secret": "oauth-s3cret",
        "basic.auth.user.info": "user:pw",
        "some.token": Secret("t0ken"),
        "linger.ms": 5,
    }
    masked = mask_config(conf)
    assert masked == {
        "bootstrap.servers": "east:9092",
        "security.protocol": "SASL_SSL",
        "sasl.username": "dr",
        "sasl.password": MASK,
        "ssl.key.password": MASK,
        "sasl.oauthbearer.client.secret": MASK,
        "basic.auth.user.info": MASK,
        "some.token": MASK,
        "linger.ms": 5,
    }
    assert conf["sasl.password"] == "hunter2"  # the input is left alone
    for secret in ("hunter2", "k3y", "oauth-s3cret", "user:pw", "t0ken"):
        assert secret not in repr(masked)
