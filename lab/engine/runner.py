"""The model runner loop: one ``execute_model`` per step, as in vLLM's Model Runner V2.

Mirrors the order of vllm/v1/worker/gpu/model_runner.py ``GPUModelRunner.execute_model``: update
request states and block tables, sort the batch, dispatch the CUDA graph, ``prepare_inputs`` (R1),
``gather_block_tables`` (R6), ``prepare_attn`` (R2, R3), then the speculator's ``propose`` (R4, R5).
Both modes are evaluated on the same batch: the mode changes metadata, never scheduling.
"""

from __future__ import annotations

import gc

import numpy as np

from lab.engine.block_table import BlockTables
from lab.engine.cudagraph import (CG_MODE_CODES, FULL, CudaGraphManager, decode_graph_eligible,
                                  kernel_visible_max_seq_len,
                                  target_capture_sizes, uniform_decode_token_count)
from lab.engine.input_batch import InputBatch, seq_lens_cpu_upper_bound, sort_batch
from lab.engine.model_states import MODES, make_model_state
from lab.engine.oor import OOR_FIELDS, StaleRegion, classify_entries
from lab.engine.recorder import Recorder
from lab.engine.scheduler import Scheduler, SchedulerOutput
from lab.engine.speculator import EagleSpeculator


class ModelRunner:
    def __init__(self, scenario, check_invariants: bool = False, keep_tables: bool = False):
        s = scenario
        self.scenario = s
        self.max_model_len = s.max_model_len
        self.block_size = s.block_size
        self.k = s.num_speculative_tokens
        self.decode_query_len = 1 + self.k
        self.max_num_reqs = s.max_num_seqs
        self.width = s.max_num_blocks_per_req
        self.block_tables = BlockTables(self.max_num_reqs, self.width)
        self.model_state = make_model_state(s.model_state, s.max_model_len, self.max_num_reqs)
        self.capture_sizes = target_capture_sizes(s)
        self.cudagraph_manager = CudaGraphManager(s.cudagraph_mode, self.capture_sizes, self.max_num_reqs,
                                                  self.decode_query_len)
        self.speculator = None
        if self.k:
            # vllm target_dependent_ar/speculator.py init_cudagraph_manager: draft decodes get
            # FULL_DECODE_ONLY graphs when the target decodes in FULL graphs, else run eagerly.
            draft_mode = "FULL_DECODE_ONLY" if self.cudagraph_manager.decode_mode == FULL else "NONE"
            self.speculator = EagleSpeculator(
                self.k, s.max_model_len, s.acceptance_rate,
                CudaGraphManager(draft_mode, self.capture_sizes, self.max_num_reqs, 1))
        self.rng = np.random.default_rng(s.seed)
        self.num_computed_tokens_gpu = np.zeros(self.max_num_reqs, dtype=np.int64)  # exact
        # vllm/v1/worker/gpu/states.py RequestState: free_indices = list(range(max_num_reqs)), pop() to add.
        self._free_req_indices = list(range(self.max_num_reqs))
        self._inst_req_index = np.full(1024, -1, dtype=np.int64)  # instance -> request slot, -1 when gone
        self.recorder = Recorder(s, self.width, self.capture_sizes, self.k)
        self.check_invariants = check_invariants
        self.tables: list[np.ndarray] | None = [] if keep_tables else None

    # ---- request states ----------------------------------------------------------------------
    def _remove(self, inst: int) -> None:
        req_index = int(self._inst_req_index[inst])
        self._inst_req_index[inst] = -1
        self.recorder.end_instance(inst, self.block_tables.block_tables[req_index, : self.block_tables.num_blocks[req_index]])
        self.model_state.remove_request(req_index)
        self._free_req_indices.append(req_index)

    def remove_all(self) -> None:
        for inst in np.nonzero(self._inst_req_index >= 0)[0].tolist():
            self._remove(inst)

    def _add(self, inst: int, req: int) -> None:
        req_index = self._free_req_indices.pop()
        if inst >= len(self._inst_req_index):
            grown = np.full(2 * inst + 1, -1, dtype=np.int64)
            grown[: len(self._inst_req_index)] = self._inst_req_index
            self._inst_req_index = grown
        self._inst_req_index[inst] = req_index
        self.block_tables.add_request(req_index)
        self.num_computed_tokens_gpu[req_index] = 0
        self.model_state.add_request(req_index)
        self.recorder.start_instance(inst, req, req_index, self.model_state.state_slot(req_index))

    # ---- one step ----------------------------------------------------------------------------
    def execute_model(self, out: SchedulerOutput, kv_owner: np.ndarray) -> np.ndarray:
        for inst in out.removed_inst:
            self._remove(inst)
        for inst, req in out.new_inst:
            self._add(inst, req)
        n = len(out.req_indices)
        if n == 0:
            self.recorder.idle_step()
            return np.zeros(0, dtype=np.int32)

        req_idx = self._inst_req_index[out.inst]
        if len(out.new_block_ids):
            has = out.new_block_counts > 0
            self.block_tables.append_block_ids(req_idx[has], out.new_block_counts[has], out.new_block_ids)

        # Batch order (vllm model_runner.py sort_batch_req_ids).
        num_sched = out.num_scheduled_tokens
        any_prefill = bool(out.is_prefilling.any())
        max_query_len = int(num_sched.max())
        if not any_prefill and int(num_sched.min()) == max_query_len:
            order = None  # a uniform decode batch keeps scheduler order
            inst, comp_cpu = out.inst, out.num_computed_tokens
            num_draft, is_prefilling, req_indices = out.num_draft_tokens, out.is_prefilling, out.req_indices
        else:
            order = sort_batch(out.num_draft_tokens > 0, num_sched, self.decode_query_len)
            req_idx = req_idx[order]
            inst = out.inst[order]
            num_sched = num_sched[order]
            comp_cpu = out.num_computed_tokens[order]
            num_draft = out.num_draft_tokens[order]
            is_prefilling = out.is_prefilling[order]
            req_indices = out.req_indices[order]

        num_tokens = n * max_query_len if order is None else int(num_sched.sum())
        eligible = not any_prefill or decode_graph_eligible(is_prefilling, num_sched, num_draft, comp_cpu)
        uniform = uniform_decode_token_count(n, num_tokens, max_query_len, eligible)
        desc = self.cudagraph_manager.dispatch(n, num_tokens, uniform)
        cg_mode = desc.cg_mode
        num_reqs_padded = desc.num_reqs if (cg_mode == FULL and desc.num_reqs) else n

        ub = seq_lens_cpu_upper_bound(comp_cpu, num_sched, num_reqs_padded)
        seq_lens = np.zeros(num_reqs_padded, dtype=np.int32)
        computed_gpu = self.num_computed_tokens_gpu[req_idx]
        seq_lens[:n] = computed_gpu + num_sched
        batch = InputBatch(
            req_indices=req_indices, idx_mapping_np=req_idx, num_reqs=n,
            num_reqs_after_padding=num_reqs_padded, num_scheduled_tokens=num_sched, num_tokens=num_tokens,
            num_tokens_after_padding=desc.num_tokens, num_computed_tokens_np=comp_cpu,
            seq_lens_cpu_upper_bound=ub, seq_lens=seq_lens, num_draft_tokens_per_req=num_draft,
            is_prefilling_np=is_prefilling, max_query_len=max_query_len)

        max_seq_len = {m: self.model_state.prepare_attn(batch, cg_mode, m).max_seq_len for m in MODES}
        kernel_max_seq_len = {m: kernel_visible_max_seq_len(cg_mode, v, self.max_model_len)
                              for m, v in max_seq_len.items()}

        table = self.block_tables.gather_block_tables(req_idx, inst, num_reqs_padded)
        num_blocks = self.block_tables.num_blocks[req_idx]
        if self.tables is not None:
            self.tables.append(table.copy())
        # One walk per (pass, mode): the target pass, then each draft pass.
        walk_msl = [kernel_max_seq_len[m] for m in MODES]
        walk_rows = [num_reqs_padded] * len(MODES)
        drafts = []
        if self.speculator is not None:
            drafts = self.speculator.propose(ub, n, cg_mode, num_reqs_padded, max_seq_len)
            for d in drafts:
                walk_msl += [d.kernel_max_seq_len[m] for m in MODES]
                walk_rows += [d.num_reqs_padded] * len(MODES)
            num_accepted = self.speculator.verify(self.rng, num_draft)
        else:
            num_accepted = np.zeros(n, dtype=np.int32)
        region = StaleRegion(table, num_blocks, self.block_tables.row_hwm, kv_owner)
        oor = region.walks(walk_msl, walk_rows, self.block_size)

        if self.check_invariants:
            self._check(batch, table, num_blocks, kv_owner, max_seq_len, drafts)
            self._check_oor(table, num_blocks, kv_owner, walk_msl, walk_rows, oor)

        # Rejected drafts roll back: only the verified token and the accepted drafts stay computed.
        kept = 1 + num_accepted
        self.num_computed_tokens_gpu[req_idx] = computed_gpu + (np.where(is_prefilling, num_sched, kept)
                                                                if any_prefill else kept)
        self.model_state.postprocess(req_idx, kept)

        self.recorder.step(inst, req_idx, comp_cpu, num_sched, seq_lens[:n], num_blocks, num_accepted,
                           num_reqs_padded, desc.num_tokens, CG_MODE_CODES[cg_mode], max_seq_len,
                           kernel_max_seq_len, oor, drafts)
        # Results go back to the scheduler in its own order.
        if order is None:
            return num_accepted
        inv = np.empty(n, dtype=np.int64)
        inv[order] = np.arange(n)
        return num_accepted[inv]

    def _check(self, batch, table, num_blocks, kv_owner, max_seq_len, drafts) -> None:
        n = batch.num_reqs
        ub = batch.seq_lens_cpu_upper_bound
        assert (batch.seq_lens[:n] <= ub[:n]).all(), "exact seq_len above its upper bound"
        assert max_seq_len["fixed"] >= ub.max() and max_seq_len["fixed"] <= self.max_model_len
        assert max_seq_len["baseline"] == self.max_model_len
        rows = self.block_tables.block_tables[batch.idx_mapping_np]
        for i in range(n):
            nb = int(num_blocks[i])
            assert (table[i, :nb] == rows[i, :nb]).all(), "gathered valid region differs from the request's blocks"
            assert nb * self.block_size >= batch.seq_lens[i], "request's blocks do not cover its tokens"
        assert (table[n:] == 0).all(), "padded rows not zeroed"
        held = kv_owner[kv_owner >= 0]
        live_blocks = np.concatenate([rows[i, : num_blocks[i]] for i in range(n)]) if n else np.empty(0)
        assert len(np.unique(live_blocks)) == len(live_blocks), "a block is owned twice"
        assert len(held) >= len(live_blocks)
        for d in drafts:
            assert d.max_seq_len["fixed"] <= self.max_model_len


    def _check_oor(self, table, num_blocks, kv_owner, walk_msl, walk_rows, oor) -> None:
        """Brute force: walk every entry and classify it, against StaleRegion's shortcut."""
        n = len(num_blocks)
        for p, (msl, rows) in enumerate(zip(walk_msl, walk_rows)):
            w = -(-msl // self.block_size)
            counts = dict.fromkeys(OOR_FIELDS, 0)
            counts["walked"] = rows * w
            counts["padded"] = (rows - n) * w
            for i in range(n):
                nb = int(num_blocks[i])
                counts["in_range"] += min(nb, w)
                for cls in classify_entries(table[i, nb:w], kv_owner):
                    counts[cls] += 1
            assert list(counts.values()) == oor[p].tolist(), (p, counts, oor[p])


def run_engine(scenario, check_invariants: bool = False, keep_tables: bool = False, progress=None):
    """Drive the scheduler and the runner until every request finished (or max_num_steps)."""
    sched = Scheduler(scenario)
    runner = ModelRunner(scenario, check_invariants=check_invariants, keep_tables=keep_tables)
    # The loop allocates many small arrays and no cycles: the cyclic GC would only rescan them.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        _loop(scenario, sched, runner, progress)
    finally:
        if gc_was_enabled:
            gc.enable()
    # Instances still live at the end (max_num_steps reached) keep their blocks in the trace.
    runner.remove_all()
    trace = runner.recorder.finish(num_preemptions=sched.num_preemptions,
                                   truncated=sched.has_unfinished_requests())
    return (trace, runner.tables) if keep_tables else trace


def _loop(scenario, sched: Scheduler, runner: ModelRunner, progress) -> None:
    clock = 0  # the scheduler's step counter, in which arrival_step is given
    num_steps = 0
    while sched.has_unfinished_requests() and num_steps < scenario.max_num_steps:
        if not len(sched.running) and not sched.waiting:
            # Nothing to run: jump to the next arrival instead of recording empty steps.
            clock = max(clock, sched.next_arrival_step())
            runner.recorder.skip_to(clock)
        out = sched.schedule(clock)
        accepted = runner.execute_model(out, sched.pool.owner)
        sched.update_from_output(out, accepted)
        clock += 1
        num_steps += len(out.req_indices) > 0
        if progress is not None:
            progress(num_steps)
