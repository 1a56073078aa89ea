"""The secure lab's material: a CA, a broker certificate, SCRAM credentials.

``kafka-dr lab up --secure`` starts the brokers with SASL_SSL (SCRAM-SHA-512) client
listeners. Everything secret lives in one file, ``<lab>/secrets.env`` (mode 600, ``export``
lines a shell can source); every other file refers to it:

- the brokers read the keystore password from their environment (Kafka's
  ``EnvVarConfigProvider``: ``server.properties`` says ``${env:...}``);
- the SCRAM users are created through the AdminClient on the broker's internal loopback
  listener, so no password is ever on a command line;
- the product config says ``${env:KAFKA_DR_LAB_SASL_PASSWORD}``; Airflow runs may instead
  carry it in an ``AIRFLOW_CONN_*`` connection (``clusters.<name>.connection``).

Two SCRAM users, as a production deployment has them: the lab's admin (``lab-admin``), the
only super user besides the brokers' own listeners, and kafka-dr's own principal
(``kafkadr``), which holds exactly the ACLs ``kafka-dr acls`` prints for the lab's config and
nothing more (granted by the admin on every ``lab up``).

Certificates are made with ``openssl`` (present wherever the JDK's lab is): a CA, and one
broker certificate for ``127.0.0.1``/``localhost`` signed by it, packed as PKCS12.
"""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
from pathlib import Path

from kafka_dr.lab.topology import LAB_PASSWORD_ENV, LAB_USER_ENV

KEYSTORE_PASSWORD_ENV = "KAFKA_DR_LAB_KEYSTORE_PASSWORD"
ADMIN_USER_ENV = "KAFKA_DR_LAB_ADMIN_USERNAME"
ADMIN_PASSWORD_ENV = "KAFKA_DR_LAB_ADMIN_PASSWORD"
LAB_USER = "kafkadr"
LAB_ADMIN = "lab-admin"


def tls_dir(root: Path) -> Path:
    return root / "tls"


def ca_file(root: Path) -> Path:
    return tls_dir(root) / "ca.pem"


def keystore_file(root: Path) -> Path:
    return tls_dir(root) / "broker.p12"


def secrets_file(root: Path) -> Path:
    return root / "secrets.env"


def read_secrets(root: Path) -> dict[str, str]:
    """The lab's secrets as environment variables (``KAFKA_DR_LAB_*``)."""
    out = {}
    for line in secrets_file(root).read_text().splitlines():
        if line.startswith("export "):
            k, _, v = line[len("export ") :].partition("=")
            out[k] = shlex.split(v)[0] if v else ""
    return out


def broker_env(root: Path) -> dict[str, str]:
    return {KEYSTORE_PASSWORD_ENV: read_secrets(root)[KEYSTORE_PASSWORD_ENV]}


def prepare(root: Path) -> None:
    """Generate the passwords, the CA and the broker keystore once (kept across restarts)."""
    root.mkdir(parents=True, exist_ok=True)
    have = read_secrets(root) if secrets_file(root).exists() else {}
    values = {
        LAB_USER_ENV: LAB_USER,
        LAB_PASSWORD_ENV: secrets.token_urlsafe(18),
        ADMIN_USER_ENV: LAB_ADMIN,
        ADMIN_PASSWORD_ENV: secrets.token_urlsafe(18),
        KEYSTORE_PASSWORD_ENV: secrets.token_urlsafe(18),
    }
    if set(values) - set(have):  # a lab made before the admin user existed keeps its passwords
        values.update(have)
        fd = os.open(secrets_file(root), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("# The secure lab's secrets: `source` this file (mode 600). Nothing else in the lab holds them.\n")
            f.writelines(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())
    if keystore_file(root).exists():
        return
    d = tls_dir(root)
    d.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **broker_env(root)}

    def openssl(*args: str) -> None:
        r = subprocess.run(["openssl", *args], cwd=d, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(
                f"openssl {args[0]} failed while making the secure lab's certificates in {d}: {r.stderr.strip()[-800:]}"
            )

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "30",
        "-subj",
        "/CN=kafka-dr lab CA",
    )
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr", "-subj", "/CN=localhost"
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "broker.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "broker.pem",
        "-days",
        "30",
        "-extfile",
        "san.ext",
    )
    openssl(
        "pkcs12",
        "-export",
        "-in",
        "broker.pem",
        "-inkey",
        "broker.key",
        "-certfile",
        "ca.pem",
        "-name",
        "broker",
        "-out",
        "broker.p12",
        "-passout",
        f"env:{KEYSTORE_PASSWORD_ENV}",
    )
    for f in ("ca.key", "broker.key", "broker.csr"):
        (d / f).chmod(0o600)


def create_users(root: Path, internal_bootstrap: str) -> None:
    """Create (or update) the lab's admin and kafka-dr's SCRAM-SHA-512 users, over the
    plaintext internal listener."""
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    s = read_secrets(root)
    admin = AdminClient({"bootstrap.servers": internal_bootstrap, "log_level": 0})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    upserts = [
        UserScramCredentialUpsertion(s[user], info, s[password].encode())
        for user, password in ((LAB_USER_ENV, LAB_PASSWORD_ENV), (ADMIN_USER_ENV, ADMIN_PASSWORD_ENV))
    ]
    for _user, fut in admin.alter_user_scram_credentials(upserts, request_timeout=30).items():
        fut.result()


def grant(cluster: str, internal_bootstrap: str, acls: list) -> None:
    """Create ``acls`` (kafka-dr's own, :func:`kafka_dr.core.product_acls.product_acls`) as the
    brokers' internal listener, a super user; creating a binding that exists is a no-op."""
    from confluent_kafka.admin import AdminClient

    from kafka_dr.kafka.acl_admin import create_acls

    refused = create_acls(AdminClient({"bootstrap.servers": internal_bootstrap, "log_level": 0}), cluster, acls)
    if refused:
        raise RuntimeError(f"granting kafka-dr's ACLs on lab cluster {cluster!r}: {next(iter(refused.values()))}")
