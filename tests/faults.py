"""Real faults for tests and benchmarks: a loopback TCP proxy that can delay, freeze or cut
the traffic to a real server, and a throwaway redis-server that can be paused (SIGSTOP)
and killed. Nothing here touches the shared servers themselves."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

from tests.waiting import poll


class FaultProxy:
    """127.0.0.1:<port> -> target. Modes: `delay` seconds added to every chunk each way
    (a slow link: the kernel still ACKs, so TCP timers never fire), `frozen` (bytes are
    held, connections stay open: a server that stopped answering), `cut()` (every
    connection reset and new ones refused)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.delay = 0.0
        self.frozen = False
        self.refusing = False
        # Chunks sent by clients towards the server: "no request reached the database".
        self.client_chunks = 0
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(256)
        self.port = int(self._sock.getsockname()[1])
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            if self.refusing:
                with contextlib.suppress(OSError):
                    client.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                    )
                    client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b, upward in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pipe, args=(a, b, upward), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket, upward: bool) -> None:
        try:
            while data := a.recv(65536):
                if upward:
                    with self._lock:
                        self.client_chunks += 1
                # Bounded waits: a frozen proxy holds bytes until thawed or closed.
                for _ in range(6000):
                    if not self.frozen or self._closed:
                        break
                    time.sleep(0.01)
                if self.delay:
                    time.sleep(self.delay)
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()

    def drop_connections(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
                s.close()

    def heal(self) -> None:
        self.delay, self.frozen, self.refusing = 0.0, False, False

    def close(self) -> None:
        self._closed = True
        self.heal()
        with contextlib.suppress(OSError):
            self._sock.close()
        self.drop_connections()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayRedis:
    """A redis-server of our own on a free port, to pause and kill without touching the
    shared one."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server")
        self.binary = binary
        self.port = free_port()
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if not poll(self._listening, timeout=5):
            self.stop()
            raise RuntimeError("redis-server did not start")

    def _listening(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
            return True
        return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def pause(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=5)

    def stop(self) -> None:
        self.kill()
