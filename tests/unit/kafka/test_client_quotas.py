"""The Java client's properties made from librdkafka settings for the quota helper."""

from __future__ import annotations

import pytest

from kafka_dr.kafka.client_quotas import QuotaCallFailed, java_properties


def test_sasl_ssl_settings_become_the_java_clients():
    conf = {
        "bootstrap.servers": "127.0.0.1:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "kafka-dr",
        "sasl.password": 'p"a\\ss',
        "ssl.ca.location": "/lab/tls/ca.pem",
        "logger": object(),
        "log_level": 0,
    }
    text = java_properties(conf, "east")
    assert "bootstrap.servers=127.0.0.1:9093\n" in text and "security.protocol=SASL_SSL\n" in text
    assert "sasl.mechanism=SCRAM-SHA-512\n" in text
    login = "org.apache.kafka.common.security.scram.ScramLoginModule"
    assert f'sasl.jaas.config={login} required username="kafka-dr"' in text
    jaas = r"p\"a\\ss"  # JAAS quoting; then .properties escapes each backslash
    assert 'password="' + jaas.replace("\\", "\\\\") + '";' in text
    assert "ssl.truststore.type=PEM\nssl.truststore.location=/lab/tls/ca.pem\n" in text


def test_plaintext_needs_nothing_but_the_bootstrap():
    assert java_properties({"bootstrap.servers": "h:1"}, "east") == "bootstrap.servers=h:1\n"


def test_settings_the_helper_cannot_carry_are_named():
    with pytest.raises(QuotaCallFailed, match=r"on 'west': client setting\(s\) ssl.key.location not supported"):
        java_properties({"bootstrap.servers": "h:1", "ssl.key.location": "/k.pem"}, "west")
    with pytest.raises(QuotaCallFailed, match="SASL mechanism GSSAPI is not supported"):
        java_properties({"bootstrap.servers": "h:1", "sasl.mechanisms": "GSSAPI"}, "west")


def test_entities_cross_the_helpers_wire_and_back():
    from kafka_dr.core.quota_sync import entity
    from kafka_dr.kafka.client_quotas import from_wire, to_wire

    for e in (entity(user="a b&c=d+e", client_id=None), entity(user=None), entity(client_id="ünï")):
        assert from_wire(to_wire(e)) == e
    assert to_wire(entity(user=None, client_id="x")) == "client-id=x&user"
    assert from_wire("user=app+x") == entity(user="app x")  # Java's URLEncoder writes a space as +


def test_the_helpers_error_line_names_the_cluster_it_is_about():
    from kafka_dr.kafka.client_quotas import blame

    assert blame("1\tTimeoutException: no answer within 30 s", ["east", "west"]) == (
        "'west'",
        "TimeoutException: no answer within 30 s",
    )
    assert blame("exit 1", ["east", "west"]) == ("'east', 'west'", "exit 1")
    assert blame("7\tSaslAuthenticationException: x", ["east"]) == ("'east'", "7\tSaslAuthenticationException: x")
