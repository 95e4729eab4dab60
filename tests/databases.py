"""Real databases for the CDC tests: a PostgreSQL 15 and a MariaDB 10.11 server, Debian's packages as
``scripts/ensure-databases.sh`` installs them (``make test`` runs it), each started by the test as a child
process on 127.0.0.1 with a free port (:func:`kafka_cluster.free_port`), its data in a temporary folder, and
killed at the end. Test code, not product code.

- :class:`PostgresServer`: ``initdb`` and ``postgres`` (as the user ``postgres`` when the tests run as root:
  PostgreSQL refuses root) with ``wal_level=logical``, the socket in the server's folder; queries through
  ``psql``.
- :class:`MariaDBServer`: ``mariadb-install-db`` and ``mariadbd`` with the binary log Debezium reads
  (``log_bin``, ``binlog_format=ROW``, ``binlog_row_image=FULL``, ``server_id``); queries through ``mariadb``.

Each server is a context manager; every process dies with the test process (``PR_SET_PDEATHSIG``, set after
the switch of user, which clears it) and :func:`kafka_cluster.stop_all` ends what a failed test left.
A query's answer is the database's own text, a row per line and a ``None`` per SQL NULL (:meth:`rows`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import kafka_cluster as kc

PG_BIN = Path("/usr/lib/postgresql/15/bin")
MARIADBD = Path("/usr/sbin/mariadbd")
MARIADB_INSTALL_DB = Path("/usr/bin/mariadb-install-db")
MARIADB = Path("/usr/bin/mariadb")
NULL = "\\N"  # psql's COPY NULL marker (a non-null value is quoted: FORCE_QUOTE *)


def _required(paths: list[Path], what: str) -> None:
    missing = [str(p) for p in paths if not os.access(p, os.X_OK)]
    if missing:
        pytest.skip(
            f"required: {what} ({', '.join(missing)}): run bash scripts/ensure-databases.sh (make test does)"
        )


def _stop(proc: subprocess.Popen | None, sig: int, timeout: float = 60.0) -> None:
    """``sig`` to ``proc``'s process group, then SIGKILL to what is left of it."""
    if proc is None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = None
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if pgid is not None:  # a postgres backend that outlived the postmaster
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _own_folder(prefix: str, user: pwd.struct_passwd | None) -> Path:
    """A new folder under the temporary dir that ``user`` may write (pytest's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if user is not None:
        os.chown(folder, user.pw_uid, user.pw_gid)
    return folder


class PostgresServer:
    """A PostgreSQL 15 server on 127.0.0.1 with ``wal_level=logical``; database ``cdc``, user ``postgres``
    (trust authentication: the tests' loopback only), time zone UTC."""

    def __init__(self, database: str = "cdc") -> None:
        _required([PG_BIN / "initdb", PG_BIN / "postgres", PG_BIN / "psql"], "Debian's postgresql-15")
        self.user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        self.database = database
        self.folder = _own_folder("logdoctor-pg-", self.user)
        self.data = self.folder / "data"
        self.port = kc.free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PGTZ": "UTC",
            "LC_ALL": "C.UTF-8",
            "PGHOST": str(self.folder),
            "PGPORT": str(self.port),
        }

    def _run(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        ids = (
            {}
            if self.user is None
            else {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        )
        return subprocess.run(
            argv, capture_output=True, text=True, env=self.env, cwd=self.folder, **ids, **kwargs
        )

    def start(self) -> PostgresServer:
        if not self.data.exists():
            done = self._run(
                [
                    str(PG_BIN / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "--locale=C.UTF-8",
                ],
                timeout=300,
            )
            assert done.returncode == 0, f"initdb: {done.stdout}{done.stderr}"
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": self.port,
            "unix_socket_directories": self.folder,
            "wal_level": "logical",
            "max_wal_senders": 8,
            "max_replication_slots": 8,
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "timezone": "UTC",
            "shared_buffers": "32MB",
            "max_connections": 30,
        }
        argv = [str(PG_BIN / "postgres"), "-D", str(self.data)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        self.proc = kc.spawn(argv, log=self.folder / "postgres.log", user=self.user, env=self.env)

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise kc.NodeExited(f"postgres exited: {(self.folder / 'postgres.log').read_text()[-3000:]}")
            return self._run([str(PG_BIN / "pg_isready"), "-q"], timeout=30).returncode == 0

        kc.wait_until("PostgreSQL to accept connections", ready, 120)
        if self.database != "postgres":
            exists = self.psql(
                f"SELECT 1 FROM pg_database WHERE datname = '{self.database}'", database="postgres"
            )
            if not exists.strip():
                self.psql(f"CREATE DATABASE {self.database}", database="postgres")
        return self

    def psql(self, sql: str, *, database: str | None = None) -> str:
        """``sql`` through ``psql`` (stop at the first error), its output unaligned and without headers."""
        done = self._run(
            [
                str(PG_BIN / "psql"),
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-U",
                "postgres",
                "-d",
                database or self.database,
            ],
            input=sql,
            timeout=300,
        )
        assert done.returncode == 0, f"psql: {done.stderr}\n{sql[:2000]}"
        return done.stdout

    def rows(self, table: str, order_by: str = "1") -> tuple[list[str], list[tuple[str | None, ...]]]:
        """``SELECT * FROM table``: the column names and every row as PostgreSQL's text output (``None``
        for NULL), in ``order_by`` order."""
        out = self.psql(
            f"COPY (SELECT * FROM {table} ORDER BY {order_by}) TO STDOUT "
            f"WITH (FORMAT csv, HEADER, FORCE_QUOTE *, NULL '{NULL}')"
        )
        return _csv_rows(out)

    def stop(self) -> None:
        _stop(self.proc, signal.SIGINT)  # the fast shutdown
        self.proc = None

    def kill(self) -> None:
        _stop(self.proc, signal.SIGKILL, 10)
        self.proc = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def _csv_rows(text: str) -> tuple[list[str], list[tuple[str | None, ...]]]:
    # NULL is the unquoted marker; every value is quoted (FORCE_QUOTE *), and no value of the tests is "\N"
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    rows = [tuple(None if v == NULL else v for v in row) for row in reader]
    return header, rows


class MariaDBServer:
    """A MariaDB 10.11 server on 127.0.0.1 with the binary log Debezium reads; database ``cdc``, a user
    ``debezium`` (password ``dbz``) with every privilege, time zone UTC."""

    USER = "debezium"
    PASSWORD = "dbz"

    def __init__(self, database: str = "cdc", server_id: int = 184054) -> None:
        _required(
            [MARIADBD, MARIADB_INSTALL_DB, MARIADB], "Debian's mariadb-server-core and mariadb-client-core"
        )
        self.database = database
        self.server_id = server_id
        self.folder = _own_folder("logdoctor-mariadb-", None)
        self.data = self.folder / "data"
        self.socket = self.folder / "mariadbd.sock"
        self.port = kc.free_port()
        self.proc: subprocess.Popen | None = None
        self.os_user = pwd.getpwuid(os.geteuid()).pw_name

    def start(self) -> MariaDBServer:
        fresh = not self.data.exists()
        if fresh:
            done = subprocess.run(
                [
                    str(MARIADB_INSTALL_DB),
                    "--no-defaults",
                    f"--datadir={self.data}",
                    f"--user={self.os_user}",
                    "--skip-test-db",
                    "--auth-root-authentication-method=socket",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"mariadb-install-db: {done.stdout}{done.stderr}"
        argv = [
            str(MARIADBD),
            "--no-defaults",
            f"--datadir={self.data}",
            f"--socket={self.socket}",
            f"--pid-file={self.folder / 'mariadbd.pid'}",
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            f"--user={self.os_user}",
            f"--server-id={self.server_id}",
            f"--log-bin={self.data / 'binlog'}",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--default-time-zone=+00:00",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=32M",
            "--innodb-log-file-size=16M",
            "--innodb-flush-log-at-trx-commit=0",
            "--sync-binlog=0",
            "--character-set-server=utf8mb4",
            f"--log-error={self.folder / 'mariadbd.err'}",
        ]
        self.proc = kc.spawn(argv, log=self.folder / "mariadbd.log")

        def ready() -> bool:
            if self.proc.poll() is not None:
                err = self.folder / "mariadbd.err"
                raise kc.NodeExited(f"mariadbd exited: {err.read_text()[-3000:] if err.exists() else ''}")
            return self._client(["-e", "SELECT 1"], check=False).returncode == 0

        kc.wait_until("MariaDB to accept connections", ready, 120)
        if fresh:
            self.sql(
                f"CREATE DATABASE {self.database}; "
                f"CREATE USER '{self.USER}'@'%' IDENTIFIED BY '{self.PASSWORD}'; "
                f"GRANT ALL PRIVILEGES ON *.* TO '{self.USER}'@'%' WITH GRANT OPTION; FLUSH PRIVILEGES;",
                database="mysql",
            )
        return self

    def _client(
        self, args: list[str], *, input: str | None = None, check: bool = True, database: str | None = None
    ):
        # the OS user's account over the socket (unix_socket authentication: root, or the user that ran
        # mariadb-install-db)
        argv = [str(MARIADB), "--no-defaults", f"--socket={self.socket}", "-u", self.os_user]
        if database:
            argv.append(database)
        done = subprocess.run([*argv, *args], input=input, capture_output=True, text=True, timeout=300)
        if check:
            assert done.returncode == 0, f"mariadb: {done.stderr}\n{(input or '')[:2000]}"
        return done

    def sql(self, sql: str, *, database: str | None = None) -> str:
        """``sql`` through the ``mariadb`` client (stop at the first error): its batch output."""
        return self._client(["-B", "-N"], input=sql, database=database or self.database).stdout

    def rows(self, table: str, order_by: str = "1") -> tuple[list[str], list[tuple[str | None, ...]]]:
        """``SELECT * FROM table``: the column names and every row as MariaDB's text output (``None`` for
        NULL, the client's XML telling NULL apart), in ``order_by`` order."""
        out = self._client(
            ["--xml", "-e", f"SELECT * FROM {table} ORDER BY {order_by}"], database=self.database
        ).stdout
        root = ET.fromstring(out)
        nil = "{http://www.w3.org/2001/XMLSchema-instance}nil"
        header: list[str] = []
        rows: list[tuple[str | None, ...]] = []
        for row in root.iter("row"):
            fields = row.findall("field")
            header = [f.get("name") for f in fields]
            rows.append(tuple(None if f.get(nil) == "true" else (f.text or "") for f in fields))
        if not rows:
            header = [line.split("\t")[0] for line in self.sql(f"SHOW COLUMNS FROM {table}").splitlines()]
        return header, rows

    def stop(self) -> None:
        _stop(self.proc, signal.SIGTERM)
        self.proc = None

    def kill(self) -> None:
        _stop(self.proc, signal.SIGKILL, 10)
        self.proc = None

    def __enter__(self) -> MariaDBServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
