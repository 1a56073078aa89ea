"""The lab's PostgreSQL: a cluster of its own for Airflow's metadata database.

Everything lives under one folder (``<lab>/postgres``)::

    data/          the cluster (initdb), owned by the user the server runs as
    run/           the server's Unix socket
    password       the superuser's password (mode 0600, owned by the caller)
    postgres.log   the server's log

The server listens on 127.0.0.1 only, on the port it is given, and asks for the password over
TCP and the socket alike (scram-sha-256). PostgreSQL refuses to run as root: run as root, the
lab runs ``initdb`` and ``pg_ctl`` as the ``postgres`` OS user (Debian's package creates it),
who owns ``data/`` and ``run/``; as anyone else they run as that user. The binaries come from
``pg_config --bindir`` or Debian's ``/usr/lib/postgresql/<version>/bin``.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import time
from pathlib import Path

from kafka_dr.lab.lab import LabError

SUPERUSER = "kafka_dr"
DATABASE = "airflow"
#: The OS user the server runs as when the lab runs as root (postgres refuses root).
SERVICE_USER = "postgres"
INSTALL_HINT = "install Debian's postgresql package (`make postgres`)"


def bindir() -> Path:
    """Where ``initdb``, ``pg_ctl`` and ``postgres`` are: ``pg_config --bindir``, else the
    newest ``/usr/lib/postgresql/<version>/bin``."""
    found = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        if out:
            found.append(Path(out))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    found += [Path(p) for p in versions if Path(p).parent.name.isdigit()]
    for d in found:
        if (d / "initdb").exists() and (d / "pg_ctl").exists():
            return d
    raise LabError(
        f"PostgreSQL's initdb and pg_ctl not found (pg_config --bindir, /usr/lib/postgresql/*/bin): {INSTALL_HINT}"
    )


def run_as_prefix(uid: int | None = None) -> list[str]:
    """The command prefix that runs a PostgreSQL program as the user the server runs as:
    nothing for a normal user, ``runuser -u postgres --`` for root."""
    if (os.geteuid() if uid is None else uid) != 0:
        return []
    return ["runuser", "-u", SERVICE_USER, "--"]


def server_options(port: int, socket_dir: Path) -> str:
    """``pg_ctl -o``: loopback only, the lab's port, the socket inside the lab folder."""
    return f"-c listen_addresses=127.0.0.1 -p {port} -k {socket_dir}"


def database_url(port: int, password: str, database: str = DATABASE) -> str:
    """SQLAlchemy's URL for Airflow (psycopg2; the password is URL-safe by construction)."""
    return f"postgresql+psycopg2://{SUPERUSER}:{password}@127.0.0.1:{port}/{database}"


class Postgres:
    """One lab PostgreSQL cluster under ``root`` on ``port``."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = Path(root).resolve()
        self.port = port

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "run"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    @property
    def password_file(self) -> Path:
        return self.root / "password"

    def password(self) -> str:
        return self.password_file.read_text().strip()

    @property
    def url(self) -> str:
        return database_url(self.port, self.password())

    # --- lifecycle ---------------------------------------------------------------------

    def ensure(self, timeout: float = 60.0) -> None:
        """Create the cluster unless it exists, start it unless it runs, create the database."""
        if not (self.data / "PG_VERSION").exists():
            self._initdb()
        if not self.running():
            self._start(timeout)
        self._ensure_database()

    def pid(self) -> int | None:
        """The postmaster's pid from ``postmaster.pid``, when that process is this cluster's
        server (its command line names the data folder)."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except (OSError, ValueError, IndexError):
            return None
        return pid if "postgres" in cmdline and str(self.data) in cmdline else None

    def running(self) -> bool:
        return self.pid() is not None

    def answering(self) -> bool:
        ready = subprocess.run(
            [str(bindir() / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-t", "3"], check=False
        )
        return ready.returncode == 0

    def stop(self, timeout: float = 60.0) -> None:
        """``pg_ctl stop -m fast`` when this cluster's server runs (checked by command line)."""
        if not self.running():
            return
        self._pg(["pg_ctl", "-D", str(self.data), "-m", "fast", "-t", str(int(timeout)), "-w", "stop"], "stopping")

    # --- internals ---------------------------------------------------------------------

    def _pg(self, argv: list[str], doing: str) -> subprocess.CompletedProcess:
        cmd = [*run_as_prefix(), str(bindir() / argv[0]), *argv[1:]]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd="/")
        if proc.returncode:
            tail = (proc.stderr or proc.stdout).strip()[-1500:]
            raise LabError(f"{doing} the lab's PostgreSQL in {self.root} failed ({' '.join(argv[:1])}): {tail}")
        return proc

    def _owned_dirs(self) -> None:
        """``data`` and ``run`` belong to the server's user (0700), so root can hand them over."""
        for d in (self.data, self.socket_dir):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o700)
            if run_as_prefix():
                user = pwd.getpwnam(SERVICE_USER)
                os.chown(d, user.pw_uid, user.pw_gid)
        if run_as_prefix() and subprocess.run([*run_as_prefix(), "test", "-w", str(self.data)], check=False).returncode:
            raise LabError(
                f"the {SERVICE_USER} user cannot reach {self.data}: a folder above it is closed to other users; "
                "put the lab folder where others may enter"
            )

    def _initdb(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if run_as_prefix():
            try:
                pwd.getpwnam(SERVICE_USER)
            except KeyError:
                raise LabError(
                    f"no OS user {SERVICE_USER!r} to run PostgreSQL as (root cannot): {INSTALL_HINT}"
                ) from None
        if self.data.exists():
            shutil.rmtree(self.data)  # an initdb that did not finish: start again
        self._owned_dirs()
        password = secrets.token_urlsafe(24)
        # initdb reads the password from a file the server's user can read; it lives only
        # for this call, and the lab's own copy is readable by the caller alone
        pwfile = self.socket_dir / "initdb-password"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
        if run_as_prefix():
            user = pwd.getpwnam(SERVICE_USER)
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        try:
            self._pg(
                [
                    "initdb",
                    "-D",
                    str(self.data),
                    "-U",
                    SUPERUSER,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ],
                "creating",
            )
        finally:
            pwfile.unlink(missing_ok=True)
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")

    def _start(self, timeout: float) -> None:
        self._owned_dirs()
        if port_in_use(self.port):
            raise LabError(f"port {self.port} on 127.0.0.1 is already in use; choose another --db-port")
        self.log.touch()
        if run_as_prefix():
            user = pwd.getpwnam(SERVICE_USER)
            os.chown(self.log, user.pw_uid, user.pw_gid)
        self._pg(
            [
                "pg_ctl",
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-o",
                server_options(self.port, self.socket_dir),
                "-t",
                str(int(timeout)),
                "-w",
                "start",
            ],
            "starting",
        )

    def _ensure_database(self) -> None:
        import psycopg2

        deadline = time.monotonic() + 30
        while True:
            try:
                conn = psycopg2.connect(
                    host="127.0.0.1",
                    port=self.port,
                    user=SUPERUSER,
                    password=self.password(),
                    dbname="postgres",
                    connect_timeout=5,
                )
                break
            except psycopg2.OperationalError as e:
                if time.monotonic() > deadline:
                    raise LabError(f"the lab's PostgreSQL on 127.0.0.1:{self.port} refused a connection: {e}") from None
                time.sleep(0.5)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
                if cur.fetchone() is None:
                    cur.execute(f"CREATE DATABASE {DATABASE}")
        finally:
            conn.close()


def port_in_use(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0
