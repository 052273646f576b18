"""The model runner loop: one ``execute_model`` per step, as in vLLM's Model Runner V2.

Mirrors the order of vllm/v1/worker/gpu/model_runner.py ``GPUModelRunner.execute_model``: update
request states and block tables, sort the batch, dispatch the CUDA graph, ``prepare_inputs`` (R1),
``prepare_attn`` (``gather_block_tables``, R6) and the model state's metadata (R2, R3), then the
speculator's ``propose`` (R4, R5). What the lab counts beyond vLLM (lab/engine/step_accounting.py
``StepAccounting``) is taken at those points.
Both modes are evaluated on the same batch: the mode changes metadata, never scheduling.

Each step ends by handing a ``StepRecord`` (lab/engine/step_record.py) to the observers;
``lab.trace.recorder.simulate`` records a ``Trace`` that way (the engine knows nothing of the trace).
"""

from __future__ import annotations

import gc
from collections.abc import Generator
from dataclasses import dataclass

import numpy as np

from lab.engine.block_table import BlockTables
from lab.engine.cudagraph import (
    FULL,
    CudaGraphManager,
    capture_sizes,
    decode_graph_eligible,
    uniform_decode_token_count,
)
from lab.engine.input_batch import InputBatch, in_batch_order, seq_lens_cpu_upper_bound, sort_batch
from lab.engine.model_states import MODES, make_model_state
from lab.engine.oor import StaleLedger
from lab.engine.scheduler import Scheduler, SchedulerOutput
from lab.engine.sliding_window import SlidingWindowGroup, masking_reach
from lab.engine.speculator import make_speculator
from lab.engine.step_accounting import StepAccounting
from lab.engine.step_record import BlockAppend, EngineEnd, RequestAdded, RequestRemoved, StepObserver, StepRecord
from lab.history import release


class ModelRunner:
    """vLLM MRV2's ``GPUModelRunner``, reduced to what builds attention metadata.

    Holds the request states (slots ``req_index``), ``BlockTables``, the model state
    (``prepare_attn``), the CUDA-graph manager and the Eagle speculator. ``execute_model`` runs one
    ``SchedulerOutput`` and returns the drafts accepted per request (in the scheduler's order).
    """

    def __init__(self, scenario, observers: list[StepObserver] = ()):
        s = scenario
        self.scenario = s
        self.max_model_len = s.max_model_len
        self.block_size = s.block_size
        self.num_speculative_tokens = s.num_speculative_tokens
        self.decode_query_len = 1 + s.num_speculative_tokens
        self.max_num_reqs = s.max_num_seqs
        self.max_num_blocks_per_req = s.max_num_blocks_per_req
        self.release = release(s.vllm_version)
        # The stale entries' class totals carried step to step (lab/engine/oor.py StaleLedger).
        self.stale_ledger = StaleLedger(s.total_num_gpu_blocks)
        self.block_tables = BlockTables(
            self.max_num_reqs,
            self.max_num_blocks_per_req,
            zero_dirty_rows=self.release.zero_dirty_rows,
            stale_ledger=self.stale_ledger,
        )
        # R11: a sliding-window KV group (vllm BlockTables' second group), None without a window.
        self.sliding = None
        if s.sliding_window:
            self.sliding = SlidingWindowGroup(
                self.max_num_reqs,
                self.max_num_blocks_per_req,
                masking_reach(s),
                s.block_size,
                self.release.zero_dirty_rows,
            )
        self.model_state = make_model_state(s.model_state, s.max_model_len, self.max_num_reqs)
        self.capture_sizes = capture_sizes(s)
        self.cudagraph_manager = CudaGraphManager(
            s.cudagraph_mode, self.capture_sizes, self.max_num_reqs, self.decode_query_len
        )
        self.speculator = None
        if self.num_speculative_tokens:
            self.speculator = make_speculator(s, self.capture_sizes, self.max_num_reqs, self.decode_query_len)
        self.rng = np.random.default_rng(s.seed)
        self.num_computed_tokens_gpu = np.zeros(self.max_num_reqs, dtype=np.int64)  # exact
        # vllm/v1/worker/gpu/states.py RequestState: free_indices = list(range(max_num_reqs)), pop() to add.
        self._free_req_indices = list(range(self.max_num_reqs))
        self._inst_req_index = np.full(1024, -1, dtype=np.int64)  # instance -> request slot, -1 when gone
        self._inst_req_num: dict[int, int] = {}  # instance -> scenario request number
        self._seen_req_nums: set[int] = set()  # requests added at least once (a re-add is a resumption)
        self.observers = list(observers)

    # ---- request states ----------------------------------------------------------------------
    def _remove(self, inst: int) -> RequestRemoved:
        req_index = int(self._inst_req_index[inst])
        self._inst_req_index[inst] = -1
        bt = self.block_tables
        removed = RequestRemoved(inst, req_index, bt.block_tables[req_index, : bt.num_blocks[req_index]].copy())
        self.model_state.remove_request(req_index)
        self._free_req_indices.append(req_index)
        return removed

    def remove_all(self) -> list[RequestRemoved]:
        return [self._remove(inst) for inst in np.nonzero(self._inst_req_index >= 0)[0].tolist()]

    def _req_id_of(self, inst: int) -> str:
        return f"req-{self._inst_req_num[inst]}"

    def _add(self, inst: int, req_num: int) -> RequestAdded:
        req_index = self._free_req_indices.pop()
        self._inst_req_num[inst] = req_num
        if inst >= len(self._inst_req_index):
            grown = np.full(2 * inst + 1, -1, dtype=np.int64)
            grown[: len(self._inst_req_index)] = self._inst_req_index
            self._inst_req_index = grown
        self._inst_req_index[inst] = req_index
        self.block_tables.add_request(req_index)
        self.num_computed_tokens_gpu[req_index] = 0
        self.model_state.add_request(req_index)
        return RequestAdded(inst, req_num, req_index, self.model_state.state_slot(req_index))

    def _notify(self, record: StepRecord) -> None:
        for observer in self.observers:
            observer.on_step(record)

    # ---- one step ----------------------------------------------------------------------------
    def execute_model(self, scheduler_output: SchedulerOutput, kv_owner: np.ndarray) -> np.ndarray:
        """One step, in the order of vllm/v1/worker/gpu/model_runner.py ``execute_model`` (and its
        ``sample_tokens``); returns the drafts accepted per request, in the scheduler's order.
        ``kv_owner``: the block pool's owners. The lab's own records (lab/engine/step_accounting.py)
        are taken where vLLM's steps happen, and handed to the observers at the end."""
        # Update the request states.
        removed = self.finish_requests(scheduler_output)
        added = self.add_requests(scheduler_output)
        accounting = StepAccounting(self, scheduler_output, kv_owner, removed, added)
        if len(scheduler_output.req_nums) == 0:
            # "No need to run the model."
            self._notify(accounting.idle_step())
            return np.zeros(0, dtype=np.int32)
        idx_mapping_np = self._inst_req_index[scheduler_output.inst]  # batch row -> request slot, scheduler order
        accounting.block_append = self.update_requests(scheduler_output, idx_mapping_np)

        # Get the batch descriptor: batch order, then the CUDA-graph dispatch (R8).
        state = self.gather_batch_req_state(scheduler_output, idx_mapping_np)
        batch_desc = self.cudagraph_manager.dispatch(*state.dispatch_args)

        # Prepare the inputs (R1), the block tables (R6, R11), then the attention metadata in both modes
        # (R2, R3; R9 for a FULL replay).
        input_batch = self.prepare_inputs(state, batch_desc)
        self.prepare_attn(input_batch, state)
        accounting.block_tables_gathered()
        attn_metadata = {m: self.model_state.prepare_attn(input_batch, batch_desc.cg_mode, m) for m in MODES}
        accounting.attn_metadata_built(batch_desc, attn_metadata)

        # propose (R4, R5), then the seeded stand-in for rejection sampling of this step's drafts.
        drafts = self.propose_draft(state, input_batch, batch_desc, attn_metadata)
        accounting.drafts_proposed()
        num_accepted = self.rejection_sample(input_batch)
        accounting.walks_counted(input_batch, drafts)

        # Postprocess results and update request states.
        self.postprocess(state, input_batch, num_accepted)
        self._notify(accounting.step_record(state, batch_desc, input_batch, attn_metadata, drafts, num_accepted))
        return self.in_scheduler_order(state, input_batch.num_reqs, num_accepted)

    def prepare_attn(self, batch: InputBatch, state: _BatchReqState) -> None:
        """vllm model_runner.py ``prepare_attn``'s ``gather_block_tables`` (R6): the kernel's input table,
        stale columns included; a sliding-window group gathers too (R11), nulling what its window
        masks (``num_computed_tokens=`` req_states' GPU view)."""
        self.block_tables.gather_block_tables(batch.idx_mapping_np, batch.num_reqs_after_padding)
        if self.sliding is not None:
            self.sliding.gather(
                self.block_tables, batch.idx_mapping_np, batch.num_reqs_after_padding, state.num_computed_tokens_gpu
            )

    def propose_draft(self, state: _BatchReqState, batch: InputBatch, batch_desc, attn_metadata: dict) -> list:
        """The speculator's ``propose`` (R4, R5): one DraftPassMetadata per draft pass, none without one."""
        if self.speculator is None:
            return []
        msl = {m: attn_metadata[m].max_seq_len for m in MODES}
        return self.speculator.propose(
            batch.seq_lens_cpu_upper_bound,
            batch.num_reqs,
            batch_desc.cg_mode,
            batch.num_reqs_after_padding,
            msl,
            batch.num_tokens_after_padding,
            state.dispatch_args[2],
        )

    def rejection_sample(self, batch: InputBatch) -> np.ndarray:
        """The lab's seeded stand-in for rejection sampling: the drafts accepted per batch row."""
        if self.speculator is None:
            return np.zeros(batch.num_reqs, dtype=np.int32)
        return self.speculator.verify(self.rng, batch.num_draft_tokens_per_req)

    @staticmethod
    def in_scheduler_order(state: _BatchReqState, num_reqs: int, num_accepted: np.ndarray) -> np.ndarray:
        """Results go back to the scheduler in its own order."""
        if state.order is None:
            return num_accepted
        inv = np.empty(num_reqs, dtype=np.int64)
        inv[state.order] = np.arange(num_reqs)
        return num_accepted[inv]

    def finish_requests(self, out: SchedulerOutput) -> list[RequestRemoved]:
        """vllm model_runner.py ``finish_requests`` (and ``free_states``): finished and preempted
        requests leave in sorted(req_id) order (the string "req-N"), which decides the order their
        slots return to the free list."""
        removed_inst = out.removed_inst
        if len(removed_inst) > 1:
            removed_inst = sorted(removed_inst, key=self._req_id_of)
        return [self._remove(inst) for inst in removed_inst]

    def add_requests(self, out: SchedulerOutput) -> list[RequestAdded]:
        """vllm model_runner.py ``add_requests``: each new request takes a slot. For MRV2 the scheduler
        sends resumed (preempted) requests after the new ones (scheduler.py schedule():
        ``scheduled_new_reqs.extend(scheduled_resumed_reqs)``), and slots are taken in that order."""
        new_inst = out.new_inst
        if not new_inst:
            return []
        seen = self._seen_req_nums
        req_nums_added = [req_num for _, req_num in new_inst]
        if not seen.isdisjoint(req_nums_added):
            new_inst = [p for p in new_inst if p[1] not in seen] + [p for p in new_inst if p[1] in seen]
        added = [self._add(inst, req_num) for inst, req_num in new_inst]
        seen.update(req_nums_added)
        return added

    def update_requests(self, out: SchedulerOutput, idx_mapping_np: np.ndarray) -> BlockAppend | None:
        """vllm model_runner.py ``update_requests``: the new block ids go to the end of each request's
        persistent block-table row (``BlockTables.append_block_ids``)."""
        if not len(out.new_block_ids):
            return None
        has = out.new_block_rows if out.new_block_rows is not None else out.new_block_counts.nonzero()[0]
        block_append = BlockAppend(idx_mapping_np[has], out.new_block_counts[has], out.new_block_ids)
        self.block_tables.append_block_ids(block_append.req_indices, block_append.counts, block_append.block_ids)
        return block_append

    def gather_batch_req_state(self, out: SchedulerOutput, idx_mapping_np: np.ndarray) -> _BatchReqState:
        """vllm model_runner.py ``gather_batch_req_state``: the batch in its order (``sort_batch_req_ids``;
        0.19/0.22 sorted by num_scheduled_tokens alone) and the arguments of the CUDA-graph dispatch."""
        num_scheduled_tokens = out.num_scheduled_tokens
        num_reqs = len(num_scheduled_tokens)
        any_prefill = np.count_nonzero(out.is_prefilling) > 0
        max_query_len = int(np.maximum.reduce(num_scheduled_tokens))
        uniform = not any_prefill and int(np.minimum.reduce(num_scheduled_tokens)) == max_query_len
        state = _BatchReqState(
            batch_inst=out.inst,
            idx_mapping_np=idx_mapping_np,
            req_nums=out.req_nums,
            num_scheduled_tokens=num_scheduled_tokens,
            num_computed_tokens=out.num_computed_tokens,
            num_draft_tokens=out.num_draft_tokens,
            is_prefilling=out.is_prefilling,
            any_prefill=any_prefill,
            max_query_len=max_query_len,
        )
        if not (uniform or self._in_batch_order(out)):
            order = (
                sort_batch(out.num_draft_tokens > 0, num_scheduled_tokens, self.decode_query_len)
                if self.release.sort_batch_req_ids
                else np.argsort(num_scheduled_tokens, kind="stable")  # 0.19/0.22 prepare_inputs: sorted(key=num)
            )
            state.reorder(order)
        num_tokens = num_reqs * max_query_len if uniform else int(np.add.reduce(state.num_scheduled_tokens))
        # A row of more than 1 + K tokens is a prefill chunk of two or more: never decode-eligible.
        eligible = not any_prefill or (
            max_query_len <= self.decode_query_len
            and decode_graph_eligible(
                state.is_prefilling, state.num_scheduled_tokens, state.num_draft_tokens, state.num_computed_tokens
            )
        )
        uniform_token_count = uniform_decode_token_count(num_reqs, num_tokens, max_query_len, eligible)
        state.dispatch_args = (num_reqs, num_tokens, uniform_token_count)
        return state

    def _in_batch_order(self, out: SchedulerOutput) -> bool:
        """Whether the scheduler's order already is the batch order, so the sort can be skipped
        (churn: the new prefill comes last)."""
        n = out.num_scheduled_tokens
        if not self.release.sort_batch_req_ids:
            return bool((n[1:] >= n[:-1]).all())
        draft_counts = out.num_draft_tokens if self.num_speculative_tokens else None  # K = 0: none
        return in_batch_order(draft_counts, n, self.decode_query_len)

    def prepare_inputs(self, state: _BatchReqState, batch_desc) -> InputBatch:
        """vllm model_runner.py ``prepare_inputs`` (R1): the CPU's upper bound of every row's length,
        and the exact lengths the GPU computes; FULL graphs pad the batch to the captured size."""
        num_reqs, num_tokens, _ = state.dispatch_args
        num_reqs_padded = batch_desc.num_reqs if (batch_desc.cg_mode == FULL and batch_desc.num_reqs) else num_reqs
        ub = seq_lens_cpu_upper_bound(state.num_computed_tokens, state.num_scheduled_tokens, num_reqs_padded)
        seq_lens = np.zeros(num_reqs_padded, dtype=np.int32)
        state.num_computed_tokens_gpu = self.num_computed_tokens_gpu[state.idx_mapping_np]  # exact (the GPU's)
        seq_lens[:num_reqs] = state.num_computed_tokens_gpu + state.num_scheduled_tokens
        return InputBatch(
            req_nums=state.req_nums,
            idx_mapping_np=state.idx_mapping_np,
            num_reqs=num_reqs,
            num_reqs_after_padding=num_reqs_padded,
            num_scheduled_tokens=state.num_scheduled_tokens,
            num_tokens=num_tokens,
            num_tokens_after_padding=batch_desc.num_tokens,
            num_computed_tokens_np=state.num_computed_tokens,
            seq_lens_cpu_upper_bound=ub,
            seq_lens=seq_lens,
            num_draft_tokens_per_req=state.num_draft_tokens,
            is_prefilling_np=state.is_prefilling,
            max_query_len=state.max_query_len,
        )

    def postprocess(self, state: _BatchReqState, batch: InputBatch, num_accepted: np.ndarray) -> None:
        """vllm model_runner.py ``postprocess``: rejected drafts roll back, so only the verified token
        and the accepted drafts stay computed (a prefill chunk keeps all its tokens)."""
        kept = 1 + num_accepted
        self.num_computed_tokens_gpu[batch.idx_mapping_np] = state.num_computed_tokens_gpu + (
            np.where(batch.is_prefilling_np, batch.num_scheduled_tokens, kept) if state.any_prefill else kept
        )
        self.model_state.postprocess(batch.idx_mapping_np, kept)


# The per-request arrays of a _BatchReqState, which reorder() permutes into batch order.
_PER_REQUEST = (
    "batch_inst",
    "idx_mapping_np",
    "req_nums",
    "num_scheduled_tokens",
    "num_computed_tokens",
    "num_draft_tokens",
    "is_prefilling",
)


@dataclass(slots=True)
class _BatchReqState:
    """The scheduled requests in batch order (vllm model_runner.py ``gather_batch_req_state``'s result)."""

    batch_inst: np.ndarray
    idx_mapping_np: np.ndarray
    req_nums: np.ndarray
    num_scheduled_tokens: np.ndarray
    num_computed_tokens: np.ndarray  # the scheduler's (CPU) view
    num_draft_tokens: np.ndarray
    is_prefilling: np.ndarray
    any_prefill: bool
    max_query_len: int
    order: np.ndarray | None = None  # batch row -> position in the scheduler's order (None: the same order)
    dispatch_args: tuple | None = None  # (num_reqs, num_tokens, uniform_token_count)
    num_computed_tokens_gpu: np.ndarray | None = None  # per batch row, read by prepare_inputs

    def reorder(self, order: np.ndarray) -> None:
        self.order = order
        for name in _PER_REQUEST:
            setattr(self, name, getattr(self, name)[order])


def engine_steps(scenario, observers: list[StepObserver] = ()) -> Generator[int, None, EngineEnd]:
    """``run_engine`` one scheduler step at a time: yields after each step (the steps recorded so
    far) and returns how the run ended, after the observers' ``on_finish``. ``python -m lab bench
    engine`` steps two engines in turn this way, so both see the same machine."""
    sched = Scheduler(scenario)
    runner = ModelRunner(scenario, observers)
    clock = 0  # the scheduler's step counter, in which arrival_step is given
    num_steps = 0
    while sched.has_unfinished_requests() and num_steps < scenario.max_num_steps:
        if not len(sched.running) and not sched.waiting:
            # Nothing to run: jump to the next arrival instead of recording empty steps.
            clock = max(clock, sched.next_arrival_step())
        scheduler_output = sched.schedule(clock)
        num_accepted = runner.execute_model(scheduler_output, sched.pool.owner)
        sched.update_from_output(scheduler_output, num_accepted)
        clock += 1
        num_steps += len(scheduler_output.req_nums) > 0
        yield num_steps
    # Requests still live at the end (max_num_steps reached) keep their blocks in the trace.
    end = EngineEnd(sched.num_preemptions, sched.has_unfinished_requests(), runner.remove_all())
    for observer in runner.observers:
        observer.on_finish(end)
    return end


def run_engine(scenario, observers: list[StepObserver] = (), progress=None) -> EngineEnd:
    """Drive the scheduler and the runner until every request finished (or max_num_steps), handing
    every step to ``observers`` (``on_step``) and then how it ended (``on_finish``)."""
    steps = engine_steps(scenario, observers)
    # The loop allocates many small arrays and no cycles: the cyclic GC would only rescan them.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while True:
            num_steps = next(steps)
            if progress is not None:
                progress(num_steps)
    except StopIteration as stop:
        return stop.value
    finally:
        if gc_was_enabled:
            gc.enable()
