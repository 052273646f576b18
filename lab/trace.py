"""The trace: every step the runner took, in both modes, and its versioned JSON file format.

A ``Trace`` is columnar (numpy arrays over all steps and rows) so that 10,000 steps x 256 requests
fit in well under 100 MB; ``trace.steps[i]`` is a light ``Step`` view with the contract's names
(DESIGN §5). ``step.block_table`` is rebuilt on demand from the block log, the same way
``gather_block_tables`` filled it (stale columns included).

File format: one JSON object::

    {"format": "maxseqlen-lab/trace", "version": 1, "scenario": {...}, "req_ids": [...], "meta": {...},
     "arrays": {name: {"dtype": "int32", "shape": [..], "data": base64(zlib(little-endian bytes))}}}

Loading checks everything it reads (format, version, scenario fields, each array's dtype, shape and
cross-references) and never unpickles anything.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import zlib
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from lab.engine.block_pool import FREE, NULL_BLOCK_ID, NULL_OWNER
from lab.engine.cudagraph import CG_MODE_NAMES, kernel_visible_max_seq_len
from lab.engine.input_batch import seq_lens_cpu_upper_bound
from lab.engine.model_states import ERAS, MODES, fixed_in_era
from lab.engine.oor import NUM_OOR_FIELDS, OOR_CLASSES, OOR_FIELDS, STALE_CLASSES, classify_owners
from lab.engine.ragged import ragged_ranges
from lab.engine.speculator import draft_step_upper_bound
from lab.scenario import RequestSpec, Scenario

FORMAT = "maxseqlen-lab/trace"
VERSION = 1
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_ARRAY_BYTES = 512 * 1024 * 1024

# name -> (dtype, shape in terms of S steps, N rows, I instances, B block log, K drafts)
_SCHEMA = {
    "row_offsets": ("int64", ("S+1",)),
    "scheduler_step": ("int32", ("S",)),
    "num_reqs_padded": ("int32", ("S",)),
    "num_tokens_padded": ("int32", ("S",)),
    "cudagraph_mode": ("int8", ("S",)),
    "max_seq_len": ("int32", ("S", 2)),
    "kernel_max_seq_len": ("int32", ("S", 2)),
    "oor": ("int64", ("S", "K+1", 2, NUM_OOR_FIELDS)),
    "draft_cudagraph_mode": ("int8", ("S", "K")),
    "draft_num_reqs_padded": ("int32", ("S", "K")),
    "draft_max_seq_len": ("int32", ("S", "K", 2)),
    "draft_kernel_max_seq_len": ("int32", ("S", "K", 2)),
    "row_inst": ("int32", ("N",)),
    "num_computed_tokens": ("int32", ("N",)),
    "num_scheduled_tokens": ("int32", ("N",)),
    "seq_lens": ("int32", ("N",)),
    "num_blocks": ("int32", ("N",)),
    "num_accepted": ("int8", ("N",)),
    "inst_req": ("int32", ("I",)),
    "inst_req_index": ("int32", ("I",)),
    "inst_state_slot": ("int32", ("I",)),
    "inst_num_blocks": ("int32", ("I",)),
    "block_log": ("int32", ("B",)),
}
# Kernel timings of a live run (lab/kernels), target pass only, all present or all absent.
# name -> (dtype, shape); NaN (or -1 for the int flags) where a step was not timed.
_TIMING_SCHEMA = {
    "kernel_ms": ("float64", ("S", 2)),            # median time of one launch, per mode
    "kernel_iqr_ms": ("float64", ("S", 2)),        # interquartile range of those launches
    "kernel_bytes_real": ("int64", ("S",)),        # K/V bytes of the real lengths (seq_lens)
    "kernel_bytes_walked": ("int64", ("S", 2)),    # K/V bytes of the pages each mode walks
    "kernel_max_abs_err": ("float64", ("S", 2)),   # masked kernel against the SDPA reference
    "kernel_trusting_wrong": ("int8", ("S", 2)),   # 1: the unmasked ("trusting") kernel was wrong
}
_TIMING_META_STR = ("backend", "device", "kernel", "dtype")
# Row columns are stored as differences from the same instance's previous row: a decode row's
# counters then repeat step after step and compress to almost nothing.
_DELTA_ROW_COLUMNS = ("num_computed_tokens", "seq_lens", "num_blocks")


class TraceFormatError(ValueError):
    """A file that is not a valid trace of this lab (or of a version it cannot read)."""


# ---- views ------------------------------------------------------------------------------------

def _by_mode(v: np.ndarray, fields: tuple[str, ...] | None = None) -> dict:
    """{mode: int} from v[mode], or {mode: {field: int}} from v[mode, field]."""
    if fields is None:
        return {m: int(v[j]) for j, m in enumerate(MODES)}
    return {m: {f: int(v[j, q]) for q, f in enumerate(fields)} for j, m in enumerate(MODES)}


class DraftStep:
    """One draft forward pass of a step: index 0 reuses the target's metadata (draft prefill)."""

    __slots__ = ("_step", "index")

    def __init__(self, step: "Step", index: int):
        self._step = step
        self.index = index

    @property
    def cudagraph_mode(self) -> str:
        return CG_MODE_NAMES[int(self._step._t.arrays["draft_cudagraph_mode"][self._step.index, self.index])]

    @property
    def num_reqs_padded(self) -> int:
        return int(self._step._t.arrays["draft_num_reqs_padded"][self._step.index, self.index])

    @property
    def seq_lens_cpu_upper_bound(self) -> list[int]:
        """R5: min(target upper bound + index, max_model_len); padded rows 0."""
        st = self._step
        return draft_step_upper_bound(st._ub(), st.num_reqs, self.index, st._t.scenario.max_model_len,
                                      self.num_reqs_padded).tolist()

    @property
    def max_seq_len(self) -> dict[str, int]:
        v = self._step._t.arrays["draft_max_seq_len"][self._step.index, self.index]
        return _by_mode(v)

    @property
    def kernel_max_seq_len(self) -> dict[str, int]:
        v = self._step._t.arrays["draft_kernel_max_seq_len"][self._step.index, self.index]
        return _by_mode(v)

    @property
    def oor(self) -> dict[str, dict[str, int]]:
        return self._step._t._oor_dict(self._step.index, 1 + self.index)

    def __repr__(self) -> str:
        return (f"DraftStep(index={self.index}, cudagraph_mode={self.cudagraph_mode!r}, "
                f"max_seq_len={self.max_seq_len}, kernel_max_seq_len={self.kernel_max_seq_len})")


class Step:
    """A view of one step of a trace; lists are built on access."""

    __slots__ = ("_t", "index", "_a", "_b")

    def __init__(self, trace: "Trace", index: int):
        self._t = trace
        self.index = index
        off = trace.arrays["row_offsets"]
        self._a, self._b = int(off[index]), int(off[index + 1])

    def _col(self, name: str) -> np.ndarray:
        return self._t.arrays[name][self._a:self._b]

    def _ub(self) -> np.ndarray:
        """R1 on the real rows (the same function the engine uses)."""
        sched = self._col("num_scheduled_tokens")
        return seq_lens_cpu_upper_bound(self._col("num_computed_tokens"), sched, len(sched))

    @property
    def num_reqs(self) -> int:
        return self._b - self._a

    @property
    def scheduler_step(self) -> int:
        return int(self._t.arrays["scheduler_step"][self.index])

    @property
    def req_ids(self) -> list[str]:
        ids = self._t.req_ids
        return [ids[r] for r in self._t.arrays["inst_req"][self._col("row_inst")].tolist()]

    @property
    def req_indices(self) -> list[int]:
        """Persistent block-table row (request slot) of each batch row: InputBatch.idx_mapping."""
        return self._t.arrays["inst_req_index"][self._col("row_inst")].tolist()

    @property
    def mamba_state_idx(self) -> list[int]:
        return self._t.arrays["inst_state_slot"][self._col("row_inst")].tolist()

    @property
    def num_computed_tokens(self) -> list[int]:
        return self._col("num_computed_tokens").tolist()

    @property
    def num_scheduled_tokens(self) -> list[int]:
        return self._col("num_scheduled_tokens").tolist()

    @property
    def num_accepted_tokens(self) -> list[int]:
        """Drafts accepted per row in this step's verification (0 for prefill rows)."""
        return self._col("num_accepted").tolist()

    @property
    def seq_lens_cpu_upper_bound(self) -> list[int]:
        """R1, as vLLM builds it: length num_reqs_padded, padded rows 0."""
        return seq_lens_cpu_upper_bound(self._col("num_computed_tokens"), self._col("num_scheduled_tokens"),
                                        self.num_reqs_padded).tolist()

    @property
    def seq_lens(self) -> list[int]:
        """Exact lengths (what the GPU computes); length num_reqs_padded, padded rows 0."""
        return self._col("seq_lens").tolist() + [0] * (self.num_reqs_padded - self.num_reqs)

    @property
    def num_reqs_padded(self) -> int:
        return int(self._t.arrays["num_reqs_padded"][self.index])

    @property
    def num_tokens(self) -> int:
        return int(self._col("num_scheduled_tokens").sum())

    @property
    def num_tokens_padded(self) -> int:
        return int(self._t.arrays["num_tokens_padded"][self.index])

    @property
    def cudagraph_mode(self) -> str:
        return CG_MODE_NAMES[int(self._t.arrays["cudagraph_mode"][self.index])]

    @property
    def max_seq_len(self) -> dict[str, int]:
        v = self._t.arrays["max_seq_len"][self.index]
        return _by_mode(v)

    @property
    def kernel_max_seq_len(self) -> dict[str, int]:
        v = self._t.arrays["kernel_max_seq_len"][self.index]
        return _by_mode(v)

    @property
    def num_blocks(self) -> list[int]:
        return self._col("num_blocks").tolist()

    @property
    def block_table(self) -> np.ndarray:
        """The gathered input table [num_reqs_padded, width] (R6), stale columns included."""
        return self._t.block_table(self.index)

    @property
    def drafts(self) -> list[DraftStep]:
        return [DraftStep(self, d) for d in range(self._t.num_speculative_tokens)]

    def history(self) -> dict[str, dict]:
        """The metadata max_seq_len of the target and of each draft pass in vLLM's three eras
        (before #40654, after #40654, after #43991), with what the kernel saw."""
        state = self._t.scenario.model_state
        mml = self._t.scenario.max_model_len
        out = {}
        for era in ERAS:
            target_fixed = fixed_in_era(era, "target", state)
            target = self.max_seq_len["fixed" if target_fixed else "baseline"]
            passes = []
            for d in self.drafts:
                # Pass 0 reuses the target metadata; the decodes follow the draft path's fix.
                fixed = target_fixed if d.index == 0 else fixed_in_era(era, "draft", state)
                v = d.max_seq_len["fixed" if fixed else "baseline"]
                passes.append({"max_seq_len": v,
                               "kernel_max_seq_len": kernel_visible_max_seq_len(d.cudagraph_mode, v, mml)})
            out[era] = {"max_seq_len": target,
                        "kernel_max_seq_len": kernel_visible_max_seq_len(self.cudagraph_mode, target, mml),
                        "drafts": passes}
        return out

    @property
    def oor(self) -> dict[str, dict[str, int]]:
        """Out-of-range entries of the target pass, by mode and class (plus walked and in_range)."""
        return self._t._oor_dict(self.index, 0)

    @property
    def oor_all_passes(self) -> dict[str, dict[str, int]]:
        """Target pass plus every draft pass."""
        return self._t._oor_dict(self.index, slice(None))

    def oor_entries(self, mode: str, pass_index: int = 0, table: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Every out-of-range entry one walk of this step reads, as columns: ``row`` (batch row),
        ``col``, ``block`` (the id found there), ``class`` (null/live/free/padded) and ``owner``
        (the req_id holding that block, "" unless live). ``pass_index`` 0 is the target pass,
        1 + d the draft pass d. Rebuilt from the trace alone (block log, instance lifetimes);
        ``table``, this step's ``block_table`` when the caller has it already, saves rebuilding it."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if pass_index == 0:
            msl, rows = self.kernel_max_seq_len[mode], self.num_reqs_padded
        else:
            d = self.drafts[pass_index - 1]
            msl, rows = d.kernel_max_seq_len[mode], d.num_reqs_padded
        t = self._t
        w = -(-msl // t.scenario.block_size)
        n = self.num_reqs
        if table is None or table.shape[0] < rows:
            table = t.block_table(self.index, num_rows=rows)
        nb = self._col("num_blocks").astype(np.int64)
        r, c = ragged_ranges(nb, np.maximum(w - nb, 0))
        pr, pc = np.divmod(np.arange((rows - n) * w, dtype=np.int64), max(w, 1))
        row = np.concatenate([r, pr + n])
        col = np.concatenate([c, pc])
        block = table[row, col].astype(np.int64)
        owner = t.block_owners(self.index)
        own = np.where(block < len(owner), owner[np.minimum(block, len(owner) - 1)], FREE)
        own[len(r):] = FREE
        cls = np.array(STALE_CLASSES + ("padded",), dtype="<U6")[classify_owners(own)]
        cls[len(r):] = "padded"
        names = np.array(t.req_ids + [""], dtype=object)
        inst_req = np.append(t.arrays["inst_req"], len(t.req_ids))
        owner_ids = names[inst_req[np.where(own >= 0, own, len(inst_req) - 1)]]
        return {"row": row, "col": col, "block": block, "class": cls, "owner": owner_ids}

    def oor_by_request(self, mode: str, pass_index: int = 0) -> dict[str, dict[str, int]]:
        """Out-of-range entries per request (req_id -> counts of null, live, free) for one walk."""
        e = self.oor_entries(mode, pass_index)
        real = e["class"] != "padded"
        per_class = {c: np.bincount(e["row"][real & (e["class"] == c)], minlength=self.num_reqs)
                     for c in ("null", "live", "free")}
        return {rid: {c: int(v[i]) for c, v in per_class.items()} for i, rid in enumerate(self.req_ids)}

    @property
    def timing(self) -> dict | None:
        """Kernel timing of this step's target pass (a live run), or None: per mode ``ms``,
        ``iqr_ms``, ``bytes_walked``, ``gbps_real`` (real bytes / time), ``gbps_walked``,
        ``max_abs_err`` and ``trusting_wrong``; and ``bytes_real``. None where not timed."""
        a = self._t.arrays
        if "kernel_ms" not in a or not np.isfinite(a["kernel_ms"][self.index]).all():
            return None
        i = self.index
        real = int(a["kernel_bytes_real"][i])
        out: dict = {"bytes_real": real}
        for j, m in enumerate(MODES):
            ms = float(a["kernel_ms"][i, j])
            walked = int(a["kernel_bytes_walked"][i, j])
            out[m] = {"ms": ms, "iqr_ms": float(a["kernel_iqr_ms"][i, j]), "bytes_walked": walked,
                      "gbps_real": real / ms / 1e6 if ms > 0 else float("nan"),
                      "gbps_walked": walked / ms / 1e6 if ms > 0 else float("nan"),
                      "max_abs_err": float(a["kernel_max_abs_err"][i, j]),
                      "trusting_wrong": int(a["kernel_trusting_wrong"][i, j])}
        return out

    def slot_mapping(self) -> list[int]:
        """R7: the slot of each scheduled token (exact positions), -1 for padding tokens."""
        from lab.engine.block_table import compute_slot_mappings

        sched = self._col("num_scheduled_tokens").astype(np.int64)
        qsl = np.concatenate([[0], np.cumsum(sched)])
        _, positions = ragged_ranges(self._col("seq_lens").astype(np.int64) - sched, sched)
        table = self.block_table[: self.num_reqs]
        return compute_slot_mappings(table, qsl, positions, self._t.scenario.block_size,
                                     max(self.num_tokens_padded, int(qsl[-1]))).tolist()

    def __repr__(self) -> str:
        return (f"Step(index={self.index}, num_reqs={self.num_reqs}, cudagraph_mode={self.cudagraph_mode!r}, "
                f"max_seq_len={self.max_seq_len}, kernel_max_seq_len={self.kernel_max_seq_len})")


class StepList(Sequence):
    def __init__(self, trace: "Trace"):
        self._t = trace

    def __len__(self) -> int:
        return len(self._t.arrays["num_reqs_padded"])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [Step(self._t, j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"step index must be an int, got {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"step {i} out of range (trace has {n} steps)")
        return Step(self._t, int(i))


# ---- the trace --------------------------------------------------------------------------------

class Trace:
    def __init__(self, scenario: Scenario, req_ids: list[str], arrays: dict[str, np.ndarray], meta: dict):
        self.scenario = scenario
        self.req_ids = list(req_ids)
        self.arrays = arrays
        self.meta = dict(meta)
        self.steps = StepList(self)

    @property
    def num_speculative_tokens(self) -> int:
        return int(self.arrays["draft_max_seq_len"].shape[1])

    @property
    def width(self) -> int:
        return int(self.meta["width"])

    @cached_property
    def _inst_block_base(self) -> np.ndarray:
        nb = self.arrays["inst_num_blocks"].astype(np.int64)
        return np.concatenate([[0], np.cumsum(nb)])[:-1]

    def _oor_dict(self, step: int, passes) -> dict[str, dict[str, int]]:
        v = self.arrays["oor"][step, passes]
        if v.ndim == 3:
            v = v.sum(axis=0)
        return _by_mode(v, OOR_FIELDS)

    def totals(self, all_passes: bool = True) -> dict[str, dict[str, int]]:
        """Summed out-of-range counts over the trace (all passes, or the target pass only)."""
        oor = self.arrays["oor"]
        v = oor.sum(axis=(0, 1)) if all_passes else oor[:, 0].sum(axis=0)
        return _by_mode(v, OOR_FIELDS)

    def out_of_range(self, mode: str, all_passes: bool = True) -> int:
        t = self.totals(all_passes)[mode]
        return sum(t[c] for c in OOR_CLASSES)

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())

    # ---- kernel timings (a live run) ---------------------------------------------------------
    @property
    def timings(self) -> dict | None:
        """What produced the kernel timings (``backend``, ``device``, ``kernel``, ``dtype``, versions,
        the reproducing ``command``, …), or None for a trace without a live kernel run."""
        return self.meta.get("kernels") if "kernel_ms" in self.arrays else None

    def attach_kernel_timings(self, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        """Add a live run's per-step kernel results (names and shapes of ``_TIMING_SCHEMA``) and
        its description ``meta`` (at least backend, device, kernel, dtype as strings)."""
        def bad(msg: str):
            raise ValueError(f"kernel timings: {msg}")

        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        _check_timings(arrays, meta, len(self.steps), bad)
        self.arrays.update({k: arrays[k].astype(_TIMING_SCHEMA[k][0]) for k in _TIMING_SCHEMA})
        self.meta["kernels"] = dict(meta)

    # ---- block tables ------------------------------------------------------------------------
    @cached_property
    def _inst_span(self) -> tuple[np.ndarray, np.ndarray]:
        """First and last step of each instance. An instance holds its blocks from its first step
        until it finishes after its last step, or is preempted before its next one."""
        a = self.arrays
        steps = np.repeat(np.arange(len(a["num_reqs_padded"])), np.diff(a["row_offsets"]))
        n_inst = len(a["inst_req"])
        first = np.full(n_inst, np.iinfo(np.int64).max)
        last = np.full(n_inst, -1)
        np.minimum.at(first, a["row_inst"], steps)
        np.maximum.at(last, a["row_inst"], steps)
        return first, last

    def block_owners(self, index: int) -> np.ndarray:
        """Owner instance of every block id during step ``index`` (FREE, or NULL_OWNER for block 0),
        rebuilt from the instances' lifetimes and the blocks each held at its latest row."""
        a = self.arrays
        first, last = self._inst_span
        alive = set(np.nonzero((first <= index) & (index <= last))[0].tolist())
        size = int(a["block_log"].max()) + 1 if len(a["block_log"]) else 1
        owner = np.full(size, FREE, dtype=np.int64)
        owner[NULL_BLOCK_ID] = NULL_OWNER
        off = a["row_offsets"]
        for s in range(index, -1, -1):
            if not alive:
                break
            lo, hi = int(off[s]), int(off[s + 1])
            for inst, nb in zip(a["row_inst"][lo:hi].tolist(), a["num_blocks"][lo:hi].tolist()):
                if inst in alive:
                    alive.discard(inst)
                    owner[self.instance_blocks(inst)[:nb]] = inst
        return owner

    def instance_blocks(self, inst: int) -> np.ndarray:
        base = int(self._inst_block_base[inst])
        return self.arrays["block_log"][base: base + int(self.arrays["inst_num_blocks"][inst])]

    def block_table(self, index: int, num_rows: int | None = None) -> np.ndarray:
        """Rebuild the gathered input table of step ``index`` by scanning back through the steps:
        a column past this step's num_blocks holds what the latest earlier step wrote there, or 0
        if a step since had fewer real rows (the row was padded or zeroed then, R6). ``num_rows`` (default num_reqs_padded) can ask
        for more rows, e.g. the ones a draft pass padded to."""
        a = self.arrays
        n_steps = len(a["num_reqs_padded"])
        if not 0 <= index < n_steps:
            raise IndexError(f"step {index} out of range (trace has {n_steps} steps)")
        off = a["row_offsets"]
        nrp = int(a["num_reqs_padded"][index]) if num_rows is None else num_rows
        table = np.zeros((nrp, self.width), dtype=np.int32)
        filled = np.zeros(nrp, dtype=np.int64)  # columns known so far
        open_ = np.ones(nrp, dtype=bool)  # rows still looking back
        for s in range(index, -1, -1):
            lo, hi = int(off[s]), int(off[s + 1])
            n = min(hi - lo, nrp)
            if n:
                nb = a["num_blocks"][lo:lo + n]
                grow = np.nonzero(open_[:n] & (nb > filled[:n]))[0]
                for r in grow.tolist():
                    blocks = self.instance_blocks(int(a["row_inst"][lo + r]))
                    table[r, filled[r]: nb[r]] = blocks[filled[r]: nb[r]]
                    filled[r] = nb[r]
            # Every row past the step's real rows is zeroed over the full width: padded rows and
            # rows a larger earlier batch left (vllm 0.33.0 gather_block_tables, _num_dirty_rows).
            open_[n:] = False
            if not open_.any():
                break
        return table

    # ---- JSON --------------------------------------------------------------------------------
    def to_json_dict(self) -> dict:
        arrays = {}
        timed = _TIMING_SCHEMA if "kernel_ms" in self.arrays else {}
        for name, (dtype, _) in {**_SCHEMA, **timed}.items():
            arr = np.ascontiguousarray(self.arrays[name], dtype=dtype)
            delta = name in _DELTA_ROW_COLUMNS
            if delta:
                arr = _delta_encode(arr, self.arrays["row_inst"])
            raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
            arrays[name] = {"dtype": dtype, "shape": list(arr.shape),
                            "encoding": "delta-per-instance+zlib+base64" if delta else "zlib+base64",
                            "data": base64.b64encode(zlib.compress(raw, 6)).decode("ascii")}
        return {"format": FORMAT, "version": VERSION, "scenario": scenario_to_dict(self.scenario),
                "req_ids": self.req_ids, "meta": self.meta, "arrays": arrays}

    def save(self, path: str | os.PathLike) -> None:
        text = json.dumps(self.to_json_dict(), separators=(",", ":"))
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Trace":
        path = os.fspath(path)
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise TraceFormatError(f"cannot read trace file {path!r}: {e.strerror}") from None
        if size > MAX_FILE_BYTES:
            raise TraceFormatError(f"{path!r} is {size / 2**20:.0f} MiB; traces are at most "
                                   f"{MAX_FILE_BYTES // 2**20} MiB")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise TraceFormatError(f"cannot read trace file {path!r}: {e.strerror}") from None
        return cls.from_json_bytes(data, source=path)

    @classmethod
    def from_json_bytes(cls, data: bytes | str, source: str = "trace") -> "Trace":
        if isinstance(data, str):
            data = data.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise TraceFormatError(f"{source} is larger than {MAX_FILE_BYTES // 2**20} MiB")
        if data[:2] == b"\x80\x04" or data[:1] in (b"\x80",):
            raise TraceFormatError(f"{source} looks like a pickle; traces are JSON only and pickles are never loaded")
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise TraceFormatError(f"{source} is not a JSON trace: {e}") from None
        return cls.from_json_dict(doc, source=source)

    @classmethod
    def from_json_dict(cls, doc, source: str = "trace") -> "Trace":
        def bad(msg: str):
            raise TraceFormatError(f"{source}: {msg}")

        if not isinstance(doc, dict):
            bad("top level must be a JSON object")
        if doc.get("format") != FORMAT:
            bad(f"not a max_seq_len lab trace (format is {doc.get('format')!r}, expected {FORMAT!r})")
        if doc.get("version") != VERSION:
            bad(f"trace version {doc.get('version')!r} is not supported (this lab reads version {VERSION})")
        for key, typ in (("scenario", dict), ("req_ids", list), ("meta", dict), ("arrays", dict)):
            if not isinstance(doc.get(key), typ):
                bad(f"field {key!r} is missing or not a {typ.__name__}")
        try:
            scenario = scenario_from_dict(doc["scenario"])
        except (ValueError, TypeError) as e:
            bad(f"invalid scenario: {e}")
        req_ids = doc["req_ids"]
        if not all(isinstance(r, str) for r in req_ids):
            bad("req_ids must be strings")
        meta = doc["meta"]
        width = meta.get("width")
        if not isinstance(width, int) or not 1 <= width <= 16 * 1024 * 1024:
            bad("meta.width must be a positive integer")
        meta = {"source": "unknown", "cudagraph_capture_sizes": [], "num_preemptions": 0, "truncated": False,
                **meta}
        sizes = meta["cudagraph_capture_sizes"]
        if not (isinstance(sizes, list) and all(isinstance(x, int) and x > 0 for x in sizes)):
            bad("meta.cudagraph_capture_sizes must be a list of positive integers")
        if not isinstance(meta["source"], str) or not isinstance(meta["truncated"], bool) or not (
                isinstance(meta["num_preemptions"], int) and meta["num_preemptions"] >= 0):
            bad("meta.source must be a string, meta.truncated a boolean, meta.num_preemptions an integer >= 0")
        unknown = set(doc["arrays"]) - set(_SCHEMA) - set(_TIMING_SCHEMA)
        if unknown:
            bad(f"unknown arrays {sorted(unknown)}")
        arrays: dict[str, np.ndarray] = {}
        for name, (dtype, _) in _SCHEMA.items():
            spec = doc["arrays"].get(name)
            if not isinstance(spec, dict):
                bad(f"array {name!r} is missing")
            arrays[name] = _decode_array(name, spec, dtype, bad)
        for name in _DELTA_ROW_COLUMNS:
            if len(arrays[name]) != len(arrays["row_inst"]):
                bad(f"array {name!r} has {len(arrays[name])} rows, row_inst has {len(arrays['row_inst'])}")
        _check_arrays(arrays, width, len(req_ids), scenario, bad)
        for name in _DELTA_ROW_COLUMNS:
            arrays[name] = _delta_decode(arrays[name], arrays["row_inst"])
        _check_rows(arrays, width, scenario, bad)
        timed = [n for n in _TIMING_SCHEMA if n in doc["arrays"]]
        if timed or "kernels" in meta:
            if len(timed) != len(_TIMING_SCHEMA) or "kernels" not in meta:
                bad(f"kernel timings need all of {sorted(_TIMING_SCHEMA)} and meta.kernels")
            for name in timed:
                spec = doc["arrays"][name]
                if not isinstance(spec, dict):
                    bad(f"array {name!r} is not an object")
                arrays[name] = _decode_array(name, spec, _TIMING_SCHEMA[name][0], bad)
            _check_timings(arrays, meta["kernels"], len(arrays["num_reqs_padded"]), bad)
        return cls(scenario, req_ids, arrays, meta)


def _decode_array(name: str, spec: dict, dtype: str, bad) -> np.ndarray:
    if spec.get("dtype") != dtype:
        bad(f"array {name!r} has dtype {spec.get('dtype')!r}, expected {dtype!r}")
    shape = spec.get("shape")
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
        bad(f"array {name!r} has an invalid shape {shape!r}")
    if spec.get("encoding") not in ("zlib+base64", "delta-per-instance+zlib+base64"):
        bad(f"array {name!r} has an unknown encoding {spec.get('encoding')!r}")
    expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if expected > MAX_ARRAY_BYTES:
        bad(f"array {name!r} would take {expected} bytes")
    data = spec.get("data")
    if not isinstance(data, str):
        bad(f"array {name!r} has no data")
    try:
        comp = base64.b64decode(data, validate=True)
        d = zlib.decompressobj()
        raw = d.decompress(comp, expected + 1)  # never inflate past the declared size
    except (ValueError, zlib.error) as e:
        bad(f"array {name!r} cannot be decoded: {e}")
    if len(raw) != expected or d.unconsumed_tail:
        bad(f"array {name!r} holds {len(raw)} bytes, its shape needs {expected}")
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)


def _check_arrays(a: dict, width: int, num_req_ids: int, scenario: Scenario, bad) -> None:
    s = len(a["num_reqs_padded"])
    k = a["draft_max_seq_len"].shape[1] if a["draft_max_seq_len"].ndim == 3 else -1
    n, i, b = len(a["row_inst"]), len(a["inst_req"]), len(a["block_log"])
    dims = {"S": s, "S+1": s + 1, "N": n, "I": i, "B": b, "K": k, "K+1": k + 1}
    for name, (_, shape) in _SCHEMA.items():
        want = tuple(dims[d] if isinstance(d, str) else d for d in shape)
        if a[name].shape != want:
            bad(f"array {name!r} has shape {list(a[name].shape)}, expected {list(want)}")
    if k != scenario.num_speculative_tokens:
        bad(f"trace has {k} draft passes per step, scenario says num_speculative_tokens="
            f"{scenario.num_speculative_tokens}")
    off = a["row_offsets"]
    if off[0] != 0 or off[-1] != n or (np.diff(off) < 0).any():
        bad("row_offsets must start at 0, never decrease and end at the number of rows")
    counts = np.diff(off)
    if (counts > a["num_reqs_padded"]).any():
        bad("a step has more rows than num_reqs_padded")
    if ((a["row_inst"] < 0) | (a["row_inst"] >= i)).any():
        bad("row_inst refers to an unknown instance")
    if ((a["inst_req"] < 0) | (a["inst_req"] >= num_req_ids)).any():
        bad("inst_req refers to an unknown request id")
    if int(a["inst_num_blocks"].astype(np.int64).sum()) != b or (a["inst_num_blocks"] < 0).any():
        bad("inst_num_blocks does not add up to the block log")
    if ((a["block_log"] < 0) | (a["block_log"] == NULL_BLOCK_ID)).any():
        bad("the block log holds the null block or a negative id")
    if not np.isin(a["cudagraph_mode"], list(CG_MODE_NAMES)).all() or (
            k and not np.isin(a["draft_cudagraph_mode"], list(CG_MODE_NAMES)).all()):
        bad("unknown cudagraph mode code")
    mml = scenario.max_model_len
    for name in ("max_seq_len", "kernel_max_seq_len", "draft_max_seq_len", "draft_kernel_max_seq_len"):
        if ((a[name] < 0) | (a[name] > mml)).any():
            bad(f"{name} outside [0, max_model_len={mml}]")
    if (a["oor"] < 0).any():
        bad("negative out-of-range count")


def _check_timings(a: dict, meta, num_steps: int, bad) -> None:
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) and meta[k] for k in _TIMING_META_STR):
        bad(f"meta.kernels must be an object with non-empty strings {list(_TIMING_META_STR)}")
    missing = set(_TIMING_SCHEMA) - set(a)
    if missing:
        bad(f"arrays {sorted(missing)} are missing")
    for name, (dtype, shape) in _TIMING_SCHEMA.items():
        want = tuple(num_steps if d == "S" else d for d in shape)
        if a[name].shape != want:
            bad(f"array {name!r} has shape {list(a[name].shape)}, expected {list(want)}")
    ms, iqr, err = a["kernel_ms"], a["kernel_iqr_ms"], a["kernel_max_abs_err"]
    if (ms[np.isfinite(ms)] <= 0).any() or (iqr[np.isfinite(iqr)] < 0).any() or (err[np.isfinite(err)] < 0).any():
        bad("kernel_ms must be > 0, kernel_iqr_ms and kernel_max_abs_err >= 0 (NaN where not timed)")
    if np.isinf(ms).any() or np.isinf(iqr).any():
        bad("kernel times must be finite or NaN")
    if (a["kernel_bytes_real"] < 0).any() or (a["kernel_bytes_walked"] < 0).any():
        bad("negative byte count")
    if not np.isin(a["kernel_trusting_wrong"], (-1, 0, 1)).all():
        bad("kernel_trusting_wrong must be -1 (not checked), 0 or 1")


def _check_rows(a: dict, width: int, scenario: Scenario, bad) -> None:
    nb = a["num_blocks"]
    if ((nb < 0) | (nb > width)).any():
        bad(f"num_blocks outside [0, width={width}]")
    if (nb > a["inst_num_blocks"][a["row_inst"]]).any():
        bad("a row uses more blocks than its instance ever held")
    if (a["num_scheduled_tokens"] < 1).any() or (a["num_computed_tokens"] < 0).any():
        bad("num_scheduled_tokens must be >= 1 and num_computed_tokens >= 0")
    ub = a["num_computed_tokens"].astype(np.int64) + a["num_scheduled_tokens"]
    if (a["seq_lens"] > ub).any() or (a["seq_lens"] < 1).any():
        bad("seq_lens must lie in [1, seq_lens_cpu_upper_bound]")


def _instance_runs(inst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows grouped by instance (stable order) and a mask of each group's first row."""
    order = np.argsort(inst, kind="stable")
    first = np.ones(len(order), dtype=bool)
    first[1:] = inst[order][1:] != inst[order][:-1]
    return order, first


def _delta_encode(col: np.ndarray, inst: np.ndarray) -> np.ndarray:
    order, first = _instance_runs(inst)
    v = col[order].astype(np.int64)
    d = np.diff(v, prepend=0)
    d[first] = v[first]
    out = np.empty_like(d)
    out[order] = d
    return out.astype(col.dtype)


def _delta_decode(col: np.ndarray, inst: np.ndarray) -> np.ndarray:
    order, first = _instance_runs(inst)
    d = col[order].astype(np.int64)
    # Cumulative sum restarting at each instance's first row.
    c = np.cumsum(d)
    starts = np.maximum.accumulate(np.where(first, np.arange(len(d)), 0)) if len(d) else np.zeros(0, np.int64)
    v = c - (c[starts] - d[starts])
    out = np.empty_like(v)
    out[order] = v
    return out.astype(col.dtype)


# ---- scenario <-> JSON ------------------------------------------------------------------------

def scenario_to_dict(s: Scenario) -> dict:
    d = dataclasses.asdict(s)
    d["requests"] = [[r.arrival_step, r.prompt_len, r.output_len] for r in s.requests]
    if s.cudagraph_capture_sizes is not None:
        d["cudagraph_capture_sizes"] = list(s.cudagraph_capture_sizes)
    return d


def scenario_from_dict(d: dict) -> Scenario:
    names = {f.name for f in dataclasses.fields(Scenario)}
    unknown = set(d) - names
    if unknown:
        raise ValueError(f"unknown scenario fields {sorted(unknown)}")
    reqs = d.get("requests")
    if not isinstance(reqs, list) or not all(isinstance(r, list) and len(r) == 3 for r in reqs):
        raise ValueError("requests must be a list of [arrival_step, prompt_len, output_len]")
    fields = dict(d)
    fields["requests"] = tuple(RequestSpec(*r) for r in reqs)
    if fields.get("cudagraph_capture_sizes") is not None:
        if not isinstance(fields["cudagraph_capture_sizes"], list):
            raise ValueError("cudagraph_capture_sizes must be a list")
        fields["cudagraph_capture_sizes"] = tuple(fields["cudagraph_capture_sizes"])
    for key in ("name", "description"):
        if key in fields and not isinstance(fields[key], str):
            raise ValueError(f"{key} must be a string")
    return Scenario(**fields)


# ---- entry point ------------------------------------------------------------------------------

def simulate(scenario: Scenario, progress=None) -> Trace:
    """Run the embedded engine on a scenario and return its trace (same scenario, same trace)."""
    from lab.engine.runner import run_engine

    if not isinstance(scenario, Scenario):
        raise TypeError(f"simulate() takes a Scenario, got {type(scenario).__name__}")
    return run_engine(scenario, progress=progress)
