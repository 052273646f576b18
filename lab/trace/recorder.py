"""Records what each step did into the columnar arrays a ``Trace`` is made of (lab/trace/schema.py),
and ``simulate``: the engine run with this recorder as its observer."""

from __future__ import annotations

import numpy as np

from lab.engine.cudagraph import CG_MODE_CODES, capture_sizes
from lab.engine.model_runner import run_engine
from lab.engine.model_states import MODES
from lab.engine.oor import NUM_OOR_FIELDS
from lab.engine.speculator import draft_step_seq_lens
from lab.engine.step_record import EngineEnd, RequestRemoved, StepRecord
from lab.scenario import Scenario
from lab.speculators import draft_pass_step, num_draft_passes
from lab.trace.trace import Trace

_ROW_COLUMNS = ("row_inst", "num_computed_tokens", "num_scheduled_tokens", "seq_lens", "num_blocks", "num_accepted")


class Recorder:
    """A step observer (lab/engine/step_record.py) that builds the ``Trace`` of a run.

    Per step it keeps the batch rows (instance, lengths, blocks) and the step's metadata in both
    modes; per instance its request, slot and the blocks it held when it ended. ``trace`` is ready
    after ``on_finish``.
    """

    def __init__(self, scenario):
        self.scenario = scenario
        # The trace's K axis: draft passes per step (0 for n-gram, 1 for the DFlash family).
        self.k = num_draft_passes(scenario.speculative_method, scenario.num_speculative_tokens)
        self.trace: Trace | None = None
        self._rows: dict[str, list[np.ndarray]] = {n: [] for n in _ROW_COLUMNS}
        self._steps: dict[str, list] = {
            n: []
            for n in (
                "num_reqs",
                "num_reqs_padded",
                "num_tokens_padded",
                "cudagraph_mode",
                "max_seq_len",
                "kernel_max_seq_len",
                "oor",
                "draft_cudagraph_mode",
                "draft_num_reqs_padded",
                "draft_max_seq_len",
                "draft_kernel_max_seq_len",
                "scheduler_step",
            )
        }
        self._inst: dict[int, list] = {}  # inst -> [req_num, req_index, mamba_state_idx, blocks]
        self._sliding_nulled: list[np.ndarray] = []  # R11, per step: entries each walk reads that were nulled
        self._draft_seq_lens: list[np.ndarray] = []  # per step: [n, K] each draft pass's exact lengths (R5)

    def _end_instance(self, removed: RequestRemoved) -> None:
        # A fresh array from the runner (observers do not write to it): kept as it is.
        self._inst[removed.inst][3] = removed.block_ids.astype(np.int32, copy=False)

    def on_step(self, record: StepRecord) -> None:
        for removed in record.removed:
            self._end_instance(removed)
        for added in record.added:
            self._inst[added.inst] = [added.req_num, added.req_index, added.mamba_state_idx, None]
        if record.is_idle:
            return
        batch = record.batch
        n = batch.num_reqs
        r = self._rows
        # Arrays handed in are fresh each step: keep them as they are, convert once in on_finish().
        r["row_inst"].append(record.batch_inst)
        r["num_computed_tokens"].append(batch.num_computed_tokens_np)
        r["num_scheduled_tokens"].append(batch.num_scheduled_tokens)
        r["seq_lens"].append(batch.seq_lens[:n])
        r["num_blocks"].append(record.num_blocks)
        r["num_accepted"].append(record.num_accepted)
        s = self._steps
        s["num_reqs"].append(n)
        s["num_reqs_padded"].append(batch.num_reqs_after_padding)
        s["num_tokens_padded"].append(batch.num_tokens_after_padding)
        s["cudagraph_mode"].append(CG_MODE_CODES[record.cg_mode])
        s["max_seq_len"].append([record.attn_metadata[m].max_seq_len for m in MODES])
        s["kernel_max_seq_len"].append([record.kernel_max_seq_len[m] for m in MODES])
        s["oor"].append(record.oor)
        s["scheduler_step"].append(record.scheduler_step)
        if record.sliding_nulled is not None:
            self._sliding_nulled.append(record.sliding_nulled)
        if self.k:
            drafts = record.drafts
            s["draft_cudagraph_mode"].append([CG_MODE_CODES[d.cudagraph_mode] for d in drafts])
            s["draft_num_reqs_padded"].append([d.num_reqs_padded for d in drafts])
            s["draft_max_seq_len"].append([[d.max_seq_len[m] for m in MODES] for d in drafts])
            s["draft_kernel_max_seq_len"].append([[d.kernel_max_seq_len[m] for m in MODES] for d in drafts])
            sc = self.scenario
            steps = [
                draft_pass_step(sc.speculative_method, d.index, sc.draft_decode_fused, sc.num_speculative_tokens)
                for d in drafts
            ]
            lens = [draft_step_seq_lens(batch.seq_lens, n, step, sc.max_model_len) for step in steps]
            self._draft_seq_lens.append(np.stack(lens, axis=1) if lens else np.zeros((n, 0), np.int32))

    def on_finish(self, end: EngineEnd) -> None:
        for removed in end.still_running:
            self._end_instance(removed)
        k = self.k
        num_steps = len(self._steps["num_reqs"])
        arrays: dict[str, np.ndarray] = {}
        for name, chunks in self._rows.items():
            dtype = np.int8 if name == "num_accepted" else np.int32
            arrays[name] = np.concatenate(chunks).astype(dtype, copy=False) if chunks else np.zeros(0, dtype)
        counts = np.array(self._steps["num_reqs"], dtype=np.int64)
        arrays["row_offsets"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        st = self._steps
        arrays["scheduler_step"] = np.array(st["scheduler_step"], dtype=np.int32)
        arrays["num_reqs_padded"] = np.array(st["num_reqs_padded"], dtype=np.int32)
        arrays["num_tokens_padded"] = np.array(st["num_tokens_padded"], dtype=np.int32)
        arrays["cudagraph_mode"] = np.array(st["cudagraph_mode"], dtype=np.int8)
        arrays["max_seq_len"] = np.array(st["max_seq_len"], dtype=np.int32).reshape(num_steps, 2)
        arrays["kernel_max_seq_len"] = np.array(st["kernel_max_seq_len"], dtype=np.int32).reshape(num_steps, 2)
        arrays["oor"] = (
            np.array(st["oor"], dtype=np.int64).reshape(num_steps, 1 + k, 2, NUM_OOR_FIELDS)
            if num_steps
            else np.zeros((0, 1 + k, 2, NUM_OOR_FIELDS), np.int64)
        )
        arrays["draft_cudagraph_mode"] = np.array(st["draft_cudagraph_mode"], dtype=np.int8).reshape(num_steps, k)
        arrays["draft_num_reqs_padded"] = np.array(st["draft_num_reqs_padded"], dtype=np.int32).reshape(num_steps, k)
        arrays["draft_max_seq_len"] = np.array(st["draft_max_seq_len"], dtype=np.int32).reshape(num_steps, k, 2)
        arrays["draft_kernel_max_seq_len"] = np.array(st["draft_kernel_max_seq_len"], dtype=np.int32).reshape(
            num_steps, k, 2
        )
        lens = self._draft_seq_lens
        arrays["draft_seq_lens"] = (
            np.concatenate(lens).astype(np.int32) if lens else np.zeros((len(arrays["row_inst"]), k), np.int32)
        )
        # Instances and the block log: each instance's blocks, contiguous.
        n_inst = max(self._inst) + 1 if self._inst else 0
        inst_req = np.full(n_inst, -1, dtype=np.int32)
        inst_req_index = np.full(n_inst, -1, dtype=np.int32)
        inst_state_slot = np.full(n_inst, -1, dtype=np.int32)
        inst_num_blocks = np.zeros(n_inst, dtype=np.int32)
        logs = []
        for i in range(n_inst):
            req_num, req_index, slot, blocks = self._inst[i]
            blocks = blocks if blocks is not None else np.zeros(0, np.int32)
            inst_req[i], inst_req_index[i], inst_state_slot[i] = req_num, req_index, slot
            inst_num_blocks[i] = len(blocks)
            logs.append(blocks)
        arrays["inst_req"] = inst_req
        arrays["inst_req_index"] = inst_req_index
        arrays["inst_state_slot"] = inst_state_slot
        arrays["inst_num_blocks"] = inst_num_blocks
        arrays["block_log"] = np.concatenate(logs).astype(np.int32) if logs else np.zeros(0, np.int32)
        meta = {
            "source": "embedded engine",
            "width": self.scenario.max_num_blocks_per_req,
            "cudagraph_capture_sizes": [int(x) for x in capture_sizes(self.scenario)],
            "num_preemptions": int(end.num_preemptions),
            "truncated": bool(end.truncated),
        }
        req_ids = [f"req-{i}" for i in range(len(self.scenario.requests))]
        self.trace = Trace(self.scenario, req_ids, arrays, meta)
        if self.scenario.sliding_window:  # the optional group (lab/trace/schema.py SLIDING_WINDOW_SCHEMA)
            nulled = np.array(self._sliding_nulled, dtype=np.int64).reshape(num_steps, 1 + k, 2)
            rule = "vllm 0.33.0 block_table.py _gather_block_tables_kernel MASK_SLIDING_WINDOW"
            self.trace.attach_sliding_window({"rule": rule}, {"sliding_nulled": nulled})


def simulate(scenario, progress=None) -> Trace:
    """Run the embedded engine on a scenario and return its trace (same scenario, same trace)."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"simulate() takes a Scenario, got {type(scenario).__name__}")
    recorder = Recorder(scenario)
    run_engine(scenario, [recorder], progress=progress)
    return recorder.trace
