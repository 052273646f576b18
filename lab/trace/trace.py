"""``Trace``: the columns of every step (lab/trace/schema.py), the block tables rebuilt from them,
totals, kernel timings, and the JSON file (lab/trace/io.py)."""

from __future__ import annotations

import os
from functools import cached_property

import numpy as np

from lab.engine.block_pool import FREE, NULL_BLOCK_ID, NULL_OWNER
from lab.engine.oor import OOR_CLASSES, OOR_FIELDS
from lab.engine.sliding_window import masking_reach, nulled_entries
from lab.history import release
from lab.scenario import Scenario
from lab.trace import io
from lab.trace.names import check_patch_meta
from lab.trace.schema import SLIDING_WINDOW_SCHEMA, TIMING_SCHEMA, VLLM_COUNT_SCHEMA
from lab.trace.step import StepList, by_mode


class Trace:
    """Every step the runner took, in both modes: ``trace.steps[i]`` is a ``Step`` view.

    ``scenario`` is the Scenario that produced it, ``req_ids`` names each scenario request,
    ``arrays`` holds the columns of lab/trace/schema.py (plus the kernel timings of a live run)
    and ``meta`` what produced it (``source``, ``width`` = the scenario's max_num_blocks_per_req,
    capture sizes, preemptions, ``truncated``). ``save``/``load`` write and read the versioned
    JSON file format of lab/trace/io.py; nothing is ever unpickled.
    """

    def __init__(self, scenario: Scenario, req_ids: list[str], arrays: dict[str, np.ndarray], meta: dict):
        self.scenario = scenario
        self.req_ids = list(req_ids)
        self.arrays = arrays
        self.meta = dict(meta)
        check_patch_meta(self.meta)  # a file's patch label is what names a mode in every view (lab/trace/names.py)
        self.steps = StepList(self)

    @property
    def num_draft_passes(self) -> int:
        """Draft attention passes per step (lab.speculators.num_draft_passes): K, 1 or 0."""
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
        return by_mode(v, OOR_FIELDS)

    def totals(self, all_passes: bool = True) -> dict[str, dict[str, int]]:
        """Summed out-of-range counts over the trace (all passes, or the target pass only)."""
        oor = self.arrays["oor"]
        v = oor.sum(axis=(0, 1)) if all_passes else oor[:, 0].sum(axis=0)
        return by_mode(v, OOR_FIELDS)

    def oor_total(self, mode: str, all_passes: bool = True) -> int:
        """Out-of-range entries over the trace in ``mode``: the sum of OOR_CLASSES in ``totals``."""
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

    def timed_steps(self) -> np.ndarray:
        """Indices of the steps with kernel timings in both modes (where ``Step.timing`` is not None)."""
        ms = self.arrays.get("kernel_ms")
        if ms is None:
            return np.zeros(0, dtype=np.int64)
        return np.isfinite(ms).all(axis=1).nonzero()[0]

    def attach_kernel_timings(self, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        """Add a live run's per-step kernel results (names and shapes of ``TIMING_SCHEMA``) and
        its description ``meta`` (at least backend, device, kernel, dtype as strings)."""

        self._attach("kernel timings", "kernels", TIMING_SCHEMA, io.check_timings, meta, arrays)

    # ---- vLLM's own kernel, counted (lab/real_vllm/kernels/trace_counts.py) -------------------------
    @property
    def vllm_counts(self) -> dict | None:
        """What counted vLLM's own kernel on this trace (``kernel``, ``vllm``, ``device``, ``config``,
        ``sm_count``, ``command``), or None."""
        return self.meta.get("vllm_kernels") if "vllm_programs" in self.arrays else None

    def attach_vllm_counts(self, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        """Add per-step counts of vLLM's own kernel (names and shapes of ``VLLM_COUNT_SCHEMA``)."""

        self._attach("vLLM kernel counts", "vllm_kernels", VLLM_COUNT_SCHEMA, io.check_vllm_counts, meta, arrays)

    # ---- a sliding-window KV group (R11, lab/engine/sliding_window.py) ---------------------------
    def attach_sliding_window(self, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        """Add the per-walk nulled counts (``SLIDING_WINDOW_SCHEMA``) of a scenario with a window."""
        if not self.scenario.sliding_window:
            raise ValueError("sliding-window counts: the scenario has no sliding window")
        self._attach(
            "sliding-window counts", "sliding_window", SLIDING_WINDOW_SCHEMA, io.check_sliding_window, meta, arrays
        )

    def _attach(self, label: str, meta_key: str, schema: dict, check, meta: dict, arrays: dict) -> None:
        """One optional array group (lab/trace/schema.py), checked as the file reader checks it."""

        def bad(msg: str):
            raise ValueError(f"{label}: {msg}")

        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        check({**self.arrays, **arrays}, meta, len(self.steps), bad)
        self.arrays.update({k: arrays[k].astype(schema[k][0]) for k in schema})
        self.meta[meta_key] = dict(meta)

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
        return self.arrays["block_log"][base : base + int(self.arrays["inst_num_blocks"][inst])]

    def sliding_nulled_rows(self, index: int) -> np.ndarray:
        """R11: the entries the sliding-window group's gather nulled in each real row of step ``index``,
        from each row's first position (seq_lens - num_scheduled_tokens: the GPU's num_computed_tokens)
        with the engine's own lab.engine.sliding_window.nulled_entries. Zeros without a window."""
        a = self.arrays
        lo, hi = int(a["row_offsets"][index]), int(a["row_offsets"][index + 1])
        first_pos = a["seq_lens"][lo:hi].astype(np.int64) - a["num_scheduled_tokens"][lo:hi]
        return nulled_entries(first_pos, a["num_blocks"][lo:hi], self._sliding_reach, self.scenario.block_size)

    @cached_property
    def _sliding_reach(self) -> int:
        return masking_reach(self.scenario)

    def block_table(self, index: int, num_rows: int | None = None, group: str = "full") -> np.ndarray:
        """Rebuild the gathered input table of step ``index`` by scanning back through the steps:
        a column past this step's num_blocks holds what the latest earlier step wrote there, or 0
        if a step since had fewer real rows (the row was padded or zeroed then, R6). ``num_rows``
        (default num_reqs_padded) can ask for more rows, e.g. the ones a draft pass padded to.
        ``group="sliding"``: the sliding-window group's table (R11), where each step's gather wrote 0
        over the entries it nulled, so a stale column can hold a 0 the full group's holds an id in."""
        if group not in ("full", "sliding"):
            raise ValueError(f"group must be 'full' or 'sliding', got {group!r}")
        sliding = group == "sliding" and self._sliding_reach > 0
        a = self.arrays
        n_steps = len(a["num_reqs_padded"])
        if not 0 <= index < n_steps:
            raise IndexError(f"step {index} out of range (trace has {n_steps} steps)")
        off = a["row_offsets"]
        nrp = int(a["num_reqs_padded"][index]) if num_rows is None else num_rows
        table = np.zeros((nrp, self.width), dtype=np.int32)
        filled = np.zeros(nrp, dtype=np.int64)  # columns known so far
        open_ = np.ones(nrp, dtype=bool)  # rows still looking back
        # The release's gather rule, as the engine ran it (lab/history.py Release.zero_dirty_rows).
        zero_dirty = release(self.scenario.vllm_version).zero_dirty_rows
        for s in range(index, -1, -1):
            lo, hi = int(off[s]), int(off[s + 1])
            n = min(hi - lo, nrp)
            if n:
                nb = a["num_blocks"][lo : lo + n]
                grow = ((nb > filled[:n]) & open_[:n]).nonzero()[0]
                nulled = self.sliding_nulled_rows(s)[:n] if sliding and len(grow) else None
                for r in grow.tolist():
                    blocks = self.instance_blocks(int(a["row_inst"][lo + r]))
                    table[r, filled[r] : nb[r]] = blocks[filled[r] : nb[r]]
                    if nulled is not None and nulled[r] > filled[r]:  # what this step's gather nulled
                        table[r, filled[r] : nulled[r]] = 0
                    filled[r] = nb[r]
            # Every row past the step's real rows is zeroed over the full width: padded rows and
            # rows a larger earlier batch left (vllm 0.33.0 gather_block_tables, _num_dirty_rows).
            # Before 0.33.0 vLLM zeroes only the padded rows; rows past them keep what was there.
            if zero_dirty:
                open_[n:] = False
            else:
                open_[n : max(n, int(a["num_reqs_padded"][s]))] = False
            if not np.count_nonzero(open_):  # (ndarray.any adds a Python wrapper: this runs per step)
                break
        return table

    # ---- JSON (lab/trace/io.py) -------------------------------------------------------------
    def to_json_dict(self) -> dict:
        return io.to_json_dict(self)

    def save(self, path: str | os.PathLike) -> None:
        io.save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Trace:
        return cls(*io.load(path))

    @classmethod
    def from_json_bytes(cls, data: bytes | str, source: str = "trace", max_requests: int | None = None) -> Trace:
        return cls(*io.from_json_bytes(data, source, *([max_requests] if max_requests else [])))

    @classmethod
    def from_json_dict(cls, doc, source: str = "trace") -> Trace:
        return cls(*io.from_json_dict(doc, source))
