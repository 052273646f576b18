"""Where a sweep keeps its finished points: one JSON line per point, appended and flushed as each
point finishes, so an interrupted sweep loses at most the points that were running. Running the
same sweep again with the same folder reads them back and runs only the rest.

    results.jsonl   {"key": point key, "point": index, "seed": s, "values": {...}, "row": {...}}

A line cut short by a crash (the last one) is ignored. Keys come from the point's spec and the
kernel options, so a changed sweep reuses exactly the points it shares with the old one.
"""

from __future__ import annotations

import json
import math
import os


def _clean(v):
    # JSON has no NaN/inf: store them as strings, read them back as floats.
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _unclean(row: dict) -> dict:
    return {k: float(v) if isinstance(v, str) and v in ("nan", "inf", "-inf") else v for k, v in row.items()}


class ResultStore:
    def __init__(self, path: str | os.PathLike | None):
        self.path = os.fspath(path) if path is not None else None
        self.done: dict[str, dict] = {}
        self.bad_lines = 0
        self._f = None
        self._lock = None
        if self.path:
            self._take_lock()
            if os.path.exists(self.path):
                self._load()

    def _take_lock(self) -> None:
        """One sweep at a time per folder: a second one would interleave its lines with ours."""
        import fcntl

        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self._lock = open(self.path + ".lock", "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            self._lock = None
            raise ValueError(
                f"another sweep is writing to {os.path.dirname(os.path.abspath(self.path))} "
                f"(its results.jsonl.lock is held); wait for it or use another --out"
            ) from None

    def _load(self) -> None:
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                    self.done[rec["key"]] = {**rec, "row": _unclean(rec["row"])}
                except (json.JSONDecodeError, KeyError, TypeError):
                    self.bad_lines += 1  # a line cut short by an interruption

    def add(self, key: str, point, row: dict) -> None:
        rec = {"key": key, "point": point.index, "seed": point.seed, "values": point.values, "row": row}
        self.done[key] = rec
        if self.path is None:
            return
        if self._f is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            self._f = open(self.path, "a+", encoding="utf-8")
            if self._f.tell() > 0:
                self._f.seek(self._f.tell() - 1)
                if self._f.read(1) != "\n":
                    self._f.write("\n")  # end the line an interruption cut short
        clean = {**rec, "row": {k: _clean(v) for k, v in row.items()}}
        self._f.write(json.dumps(clean, separators=(",", ":")) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
        if self._lock is not None:
            self._lock.close()  # closing the file releases the lock
            self._lock = None
