"""A real PostgreSQL server for the tests, from the Debian ``postgresql`` package (``make test`` installs it).

PostgreSQL refuses to run as root, so under root ``initdb`` and ``pg_ctl`` run as the ``postgres`` system user
(``runuser``), in a temporary directory owned by it; otherwise as the current user. The server listens on
127.0.0.1 on a free port and on a unix socket in that directory, with trust authentication (nothing else can reach
it), fsync off (a test database need not survive a crash).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from tests.support.nodered import free_port

SYSTEM_USER = "postgres"


def postgres_bin() -> Path | None:
    """The newest installed ``/usr/lib/postgresql/<version>/bin`` with ``initdb`` and ``pg_ctl``, or ``None``."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found = [d for d in found if (d / "pg_ctl").exists()]
    return max(found, key=lambda d: int(d.parent.name)) if found else None


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory; :meth:`new_database` gives each test a database of its own.

    Raises (``start``): ``RuntimeError`` with the server's log when it does not start.
    """

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="ai-sidebar-pg-"))
        self.port = free_port()
        self._as_system_user = os.geteuid() == 0
        self.url = f"postgresql://{SYSTEM_USER}@127.0.0.1:{self.port}"

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self._as_system_user:
            command = ["runuser", "-u", SYSTEM_USER, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)

    def start(self) -> None:
        if self._as_system_user:
            shutil.chown(self.root, SYSTEM_USER, SYSTEM_USER)
        data, log = self.root / "data", self.root / "server.log"
        # C.UTF-8: the full-text parser then sees any script's letters as word characters (Chinese included).
        done = self._run("initdb", "-D", str(data), "-U", SYSTEM_USER, "-A", "trust", "-E", "UTF8",
                         "--locale=C.UTF-8", "--no-sync")
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stdout}\n{done.stderr}")
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        done = self._run("pg_ctl", "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
        if done.returncode != 0:
            text = log.read_text() if log.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {done.stdout}\n{done.stderr}\n{text}")

    def new_database(self) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(f"{self.url}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"{self.url}/{name}"

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
