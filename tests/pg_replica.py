"""A real streaming replica of the test PostgreSQL server, made by `pg_basebackup -R`.

The copy lives in a temporary directory and runs on a free loopback port, as the
`postgres` OS user when the tests run as root (the server refuses to run as root). It
needs the primary to accept replication connections from 127.0.0.1 (`.ci/run` adds the
pg_hba.conf line on a fresh machine) and the binaries of the primary's major version.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.faults import free_port


def binaries(major: int) -> Path | None:
    """The bin directory of PostgreSQL `major` (Debian: /usr/lib/postgresql/<major>/bin)."""
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/{major}/bin")):
        if os.path.exists(os.path.join(candidate, "pg_basebackup")):
            return Path(candidate)
    found = shutil.which("pg_basebackup")
    return Path(found).parent if found else None


class Replica:
    """One standby: `start()` makes and starts it, `stop()`/`resume()` stop and restart
    the server, `destroy()` stops it and removes its directory."""

    def __init__(self, bindir: Path, primary: dict[str, Any]) -> None:
        self.bindir = bindir
        self.primary = primary
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="replica-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.user: str | None = "postgres" if os.geteuid() == 0 else None

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            user=self.user,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self) -> None:
        if self.user is not None:
            owner = pwd.getpwnam(self.user)
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        os.chmod(self.root, 0o700)
        made = self._run(
            "pg_basebackup",
            *("-h", str(self.primary.get("HOST") or "127.0.0.1")),
            *("-p", str(self.primary.get("PORT") or 5432)),
            *("-U", str(self.primary.get("USER") or "postgres")),
            *("-D", str(self.data), "-R", "-X", "stream", "-c", "fast", "--no-sync"),
        )
        if made.returncode != 0:
            raise RuntimeError(
                f"pg_basebackup failed ({made.returncode}): {made.stderr.strip()}\n"
                "The primary must allow replication from 127.0.0.1 in pg_hba.conf "
                "(host replication all 127.0.0.1/32 trust) and have wal_level=replica."
            )
        # Debian keeps these files in /etc/postgresql, outside the copied directory.
        (self.data / "postgresql.conf").write_text("")
        (self.data / "pg_hba.conf").write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
        (self.data / "pg_ident.conf").write_text("")
        if self.user is not None:
            owner = pwd.getpwnam(self.user)
            for path in (self.data / name for name in ("postgresql.conf", "pg_hba.conf", "pg_ident.conf")):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self.resume()

    def resume(self) -> None:
        options = (
            f"-c port={self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.root} "
            "-c hot_standby=on -c fsync=off -c shared_buffers=16MB "
            "-c max_standby_streaming_delay=-1"
        )
        started = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
        if started.returncode != 0:
            raise RuntimeError(f"replica did not start: {started.stderr}\n{self.log_text()}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", timeout=60)

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    def log_text(self) -> str:
        try:
            return self.log.read_text()
        except OSError:
            return ""

    def sql(self, query: str, dbname: str) -> str:
        """One query on the replica through psql (outside Django's connections)."""
        deadline = time.monotonic() + 30
        while True:
            done = self._run(
                "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", dbname,
                "-Atc", query,
            )  # fmt: skip
            if done.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)  # the standby may still be reaching consistency
        if done.returncode != 0:
            raise RuntimeError(f"psql on the replica failed: {done.stderr}")
        return done.stdout.strip()
