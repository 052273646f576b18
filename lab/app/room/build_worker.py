"""The step data (lab/export/payload.py: every view at every step) built in a process of its own, under a wall-time
and a memory limit that the operating system enforces: a build Python cannot stop from inside (one long numpy
call, a view that allocates gigabytes) is killed, the server goes on, and the next build starts a fresh process.
The server's own threads never share the interpreter lock with a build, so the page's routes (``GET /config``, the
queue's status) answer while one runs (hostile probe 2026-12-07, M3 and M4: one 507-s build held the one worker
thread and 45 waiting requests stalled every page for two minutes).

The trace goes to the process as its JSON file (lab/trace/io.py, checked again there), the data comes back
gzip-compressed; never a pickle. ``python -m lab.app.room.build_worker MAX_BYTES`` is the process itself.
"""

from __future__ import annotations

import gzip
import json
import os
import select
import subprocess
import sys
import threading
import time

WALL_S = 180.0  # a build within the app's budget (lab/cost.py) takes about 30 s of one core at most
MAX_BYTES = 3 * 2**30  # the process's address space (RLIMIT_AS): Python, numpy, plotly and one build
_HEADER = 8  # each message: its length, 8 bytes big-endian, then the bytes


class BuildFailed(RuntimeError):
    """The build ran out of time or memory (its process was killed), or its process failed."""


def build_in_process(trace) -> bytes:
    """The gzip-compressed step data of ``trace``, built here (the plain version the process runs)."""
    from lab.export.payload import payload_json, step_payload

    return gzip.compress(payload_json(step_payload(trace)).encode("utf-8"), 1, mtime=0)


class BuildProcess:
    """One build at a time in ``python -m lab.app.room.build_worker``, started when first needed and again after
    it was killed; ``build(trace)`` waits at most ``wall_s`` seconds."""

    def __init__(self, wall_s: float = WALL_S, max_bytes: int = MAX_BYTES):
        self.wall_s, self.max_bytes = wall_s, max_bytes
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self.started = 0  # processes started (a test reads it)

    def _process(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "lab.app.room.build_worker", str(self.max_bytes)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
            )
            self.started += 1
        return self._proc

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def build(self, trace) -> bytes:
        """``trace``'s step data, gzip-compressed; ``BuildFailed`` past the wall time or the memory, ValueError for
        what the build itself refused."""
        data = json.dumps(trace.to_json_dict(), separators=(",", ":")).encode("utf-8")
        with self._lock:
            proc = self._process()
            try:
                proc.stdin.write(len(data).to_bytes(_HEADER, "big") + data)
                proc.stdin.flush()
                reply = _read_message(proc.stdout.fileno(), time.monotonic() + self.wall_s)
            except TimeoutError:
                self._kill()
                raise BuildFailed(f"the step data took over {self.wall_s:g} s to build: stopped") from None
            except (BrokenPipeError, EOFError, OSError):
                self._kill()
                raise BuildFailed("the step data's build process ended (out of memory?): stopped") from None
        if reply[:1] == b"K":
            return reply[1:]
        raise ValueError(reply[1:].decode("utf-8", errors="replace"))

    def close(self) -> None:
        with self._lock:
            self._kill()


def _read_exactly(fd: int, n: int, deadline: float) -> bytes:
    chunks, left = [], n
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_message(fd: int, deadline: float) -> bytes:
    return _read_exactly(fd, int.from_bytes(_read_exactly(fd, _HEADER, deadline), "big"), deadline)


def _serve(max_bytes: int) -> None:
    """The process: its memory limited, one trace in, its step data (or why not) out. Its priority is the step-data
    thread's that started it (lab.app.background.lower_priority: nice 10, inherited), below the server's."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a print anywhere goes to stderr, never into a reply
    requests = sys.stdin.buffer
    from lab.trace import Trace

    while True:
        head = requests.read(_HEADER)
        if len(head) < _HEADER:
            return
        data = requests.read(int.from_bytes(head, "big"))
        try:
            reply = b"K" + build_in_process(Trace.from_json_bytes(data, source="the trace"))
        except MemoryError:
            reply = b"E" + f"the step data needs more than {max_bytes // 2**20:,} MiB: not built".encode()
        except Exception as e:  # noqa: BLE001 (said back to the server, which logs it; the process goes on)
            reply = b"E" + f"{type(e).__name__}: {e}".encode("utf-8", errors="replace")
        del data
        replies.write(len(reply).to_bytes(_HEADER, "big") + reply)
        replies.flush()


if __name__ == "__main__":
    _serve(int(sys.argv[1]) if len(sys.argv) > 1 else MAX_BYTES)
