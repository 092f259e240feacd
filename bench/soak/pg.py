"""A private PostgreSQL for the soak (initdb and pg_ctl in a temporary directory, on a port
of its own), so that it can be crashed and restarted: the machine's server is shared and
never touched. Run as the `postgres` user when this process is root (initdb refuses root).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.faults import free_port


def binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class PrivatePostgres:
    def __init__(self) -> None:
        bin_dir = binaries()
        if bin_dir is None:
            raise SystemExit("--pg private needs initdb and pg_ctl (/usr/lib/postgresql/*/bin)")
        self.bin = bin_dir
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="soak-pg-"))
        self.data = self.dir / "data"
        self.running = False
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(
            [*prefix, str(self.bin / tool), *args], check=True, stdout=subprocess.DEVNULL, cwd=self.dir
        )

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/soak"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "log"), "-o", options, "-w", "start")
        self.running = True

    def crash(self) -> None:
        """Stop without a clean shutdown (as a crash): recovery replays the WAL on start."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        self.running = False

    def close(self) -> None:
        subprocess.run(
            [*(["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []),
             str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
            check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        shutil.rmtree(self.dir, ignore_errors=True)
