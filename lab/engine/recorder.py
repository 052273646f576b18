"""Collects what each step did into the columnar arrays a ``Trace`` is made of."""

from __future__ import annotations

import numpy as np

from lab.engine.cudagraph import CG_MODE_CODES
from lab.engine.model_states import MODES
from lab.engine.oor import NUM_OOR_FIELDS


class Recorder:
    def __init__(self, scenario, width: int, capture_sizes: list[int], k: int):
        self.scenario = scenario
        self.width = width
        self.capture_sizes = capture_sizes
        self.k = k
        self._rows: dict[str, list[np.ndarray]] = {n: [] for n in (
            "row_inst", "num_computed_tokens", "num_scheduled_tokens", "seq_lens", "num_blocks", "num_accepted")}
        self._steps: dict[str, list] = {n: [] for n in (
            "num_reqs", "num_reqs_padded", "num_tokens_padded", "cudagraph_mode", "max_seq_len",
            "kernel_max_seq_len", "oor", "draft_cudagraph_mode", "draft_num_reqs_padded", "draft_max_seq_len",
            "draft_kernel_max_seq_len", "scheduler_step")}
        self._inst: dict[int, list] = {}  # inst -> [req, req_index, state_slot, blocks]
        self._scheduler_step = 0

    def start_instance(self, inst: int, req: int, req_index: int, state_slot: int) -> None:
        self._inst[inst] = [req, req_index, state_slot, None]

    def end_instance(self, inst: int, blocks: np.ndarray) -> None:
        self._inst[inst][3] = blocks.astype(np.int32, copy=True)

    def idle_step(self) -> None:
        self._scheduler_step += 1

    def step(self, inst, req_idx, num_computed, num_sched, seq_lens, num_blocks, num_accepted, num_reqs_padded,
             num_tokens_padded, cg_code, max_seq_len, kernel_max_seq_len, oor, drafts) -> None:
        r = self._rows
        # Arrays handed in are fresh each step: keep them as they are, convert once in finish().
        r["row_inst"].append(inst)
        r["num_computed_tokens"].append(num_computed)
        r["num_scheduled_tokens"].append(num_sched)
        r["seq_lens"].append(seq_lens)
        r["num_blocks"].append(num_blocks)
        r["num_accepted"].append(num_accepted)
        s = self._steps
        s["num_reqs"].append(len(inst))
        s["num_reqs_padded"].append(num_reqs_padded)
        s["num_tokens_padded"].append(num_tokens_padded)
        s["cudagraph_mode"].append(cg_code)
        s["max_seq_len"].append([max_seq_len[m] for m in MODES])
        s["kernel_max_seq_len"].append([kernel_max_seq_len[m] for m in MODES])
        s["oor"].append(oor)
        s["scheduler_step"].append(self._scheduler_step)
        self._scheduler_step += 1
        if self.k:
            s["draft_cudagraph_mode"].append([CG_MODE_CODES[d.cudagraph_mode] for d in drafts])
            s["draft_num_reqs_padded"].append([d.num_reqs_padded for d in drafts])
            s["draft_max_seq_len"].append([[d.max_seq_len[m] for m in MODES] for d in drafts])
            s["draft_kernel_max_seq_len"].append([[d.kernel_max_seq_len[m] for m in MODES] for d in drafts])

    def skip_to(self, scheduler_step: int) -> None:
        self._scheduler_step = scheduler_step

    def finish(self, num_preemptions: int, truncated: bool):
        from lab.trace import Trace

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
        arrays["oor"] = (np.array(st["oor"], dtype=np.int64).reshape(num_steps, 1 + k, 2, NUM_OOR_FIELDS)
                         if num_steps else np.zeros((0, 1 + k, 2, NUM_OOR_FIELDS), np.int64))
        arrays["draft_cudagraph_mode"] = np.array(st["draft_cudagraph_mode"], dtype=np.int8).reshape(num_steps, k)
        arrays["draft_num_reqs_padded"] = np.array(st["draft_num_reqs_padded"], dtype=np.int32).reshape(num_steps, k)
        arrays["draft_max_seq_len"] = np.array(st["draft_max_seq_len"], dtype=np.int32).reshape(num_steps, k, 2)
        arrays["draft_kernel_max_seq_len"] = np.array(
            st["draft_kernel_max_seq_len"], dtype=np.int32).reshape(num_steps, k, 2)
        # Instances and the block log: each instance's blocks, contiguous.
        n_inst = max(self._inst) + 1 if self._inst else 0
        inst_req = np.full(n_inst, -1, dtype=np.int32)
        inst_req_index = np.full(n_inst, -1, dtype=np.int32)
        inst_state_slot = np.full(n_inst, -1, dtype=np.int32)
        inst_num_blocks = np.zeros(n_inst, dtype=np.int32)
        logs = []
        for i in range(n_inst):
            req, req_index, slot, blocks = self._inst[i]
            blocks = blocks if blocks is not None else np.zeros(0, np.int32)
            inst_req[i], inst_req_index[i], inst_state_slot[i] = req, req_index, slot
            inst_num_blocks[i] = len(blocks)
            logs.append(blocks)
        arrays["inst_req"] = inst_req
        arrays["inst_req_index"] = inst_req_index
        arrays["inst_state_slot"] = inst_state_slot
        arrays["inst_num_blocks"] = inst_num_blocks
        arrays["block_log"] = np.concatenate(logs).astype(np.int32) if logs else np.zeros(0, np.int32)
        meta = {
            "source": "embedded engine",
            "width": self.width,
            "cudagraph_capture_sizes": [int(x) for x in self.capture_sizes],
            "num_preemptions": int(num_preemptions),
            "truncated": bool(truncated),
        }
        req_ids = [f"req-{i}" for i in range(len(self.scenario.requests))]
        return Trace(self.scenario, req_ids, arrays, meta)
