"""Continuous-batching scheduler with chunked prefill, a token budget and preemption.

Mirrors vllm/v1/core/sched/scheduler.py ``Scheduler.schedule`` (FCFS, chunked prefill on, no prefix
caching): running requests first, in order, each taking ``min(tokens it needs, budget left)`` and
capped so no position reaches ``max_model_len``; then waiting requests while the budget and
``max_num_seqs`` allow. Drafts count against the budget; a request whose blocks cannot be allocated
preempts the last running request (recompute). Under async scheduling the scheduler advances
``num_computed_tokens`` optimistically and learns the previous step's rejected drafts only after it
scheduled the next step, which is why ``seq_lens_cpu_upper_bound`` is an upper bound (R1).

One simplification: a request is known to be finished right after its step (vLLM's async scheduler
can schedule a finishing request once more and drop the result).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from lab.engine.block_pool import BlockPool
from lab.engine.plain import schedule_running
from lab.engine.ragged import ragged_ranges
from lab.history import release
from lab.speculators import max_num_new_slots_for_drafting, num_lookahead_tokens

WAITING, RUNNING, FINISHED = 0, 1, 2
_NONE = np.empty(0, dtype=np.intp)  # no block ids, no rows (read-only)


@dataclass(slots=True)
class _RunningPass:
    """What the running requests' pass decided, per running request (in running order)."""

    req: np.ndarray  # the running requests
    num_new: np.ndarray  # tokens scheduled for each
    counts: np.ndarray  # new blocks for each
    chunks: list  # the new block ids, in order
    budget: int  # token budget left
    preempted: int  # requests preempted in this pass
    comp: np.ndarray  # num_computed_tokens before the step
    in_prefill: np.ndarray
    inst: np.ndarray  # runner instances
    any_prefill: bool  # whether any of them is still in (chunked) prefill
    rows: np.ndarray | None = None  # positions of the requests given new blocks (None: not known)

    def scheduled_only(self) -> _RunningPass:
        """The requests given tokens (a request left without budget is not in this step)."""
        s = self.num_new > 0
        return _RunningPass(
            req=self.req[s],
            num_new=self.num_new[s],
            counts=self.counts[s],
            chunks=self.chunks,
            budget=self.budget,
            preempted=self.preempted,
            comp=self.comp[s],
            in_prefill=self.in_prefill[s],
            inst=self.inst[s],
            any_prefill=self.any_prefill,
        )


class _Admissions:
    """The waiting requests admitted this step, in order: their tokens, first blocks and instances."""

    __slots__ = ("req", "tokens", "counts", "chunks", "inst")

    def __init__(self, req: list, tokens: list, counts: list, chunks: list, inst: list):
        self.req, self.tokens, self.counts, self.chunks = req, tokens, counts, chunks
        self.inst = inst  # (instance, request) pairs


@dataclass
class SchedulerOutput:
    req_nums: np.ndarray  # scheduled requests (scenario request numbers), in scheduling order
    inst: np.ndarray  # their runner instance ids (a preempted request comes back as a new instance)
    num_scheduled_tokens: np.ndarray
    num_computed_tokens: np.ndarray  # the scheduler's (CPU) view before this step
    num_draft_tokens: np.ndarray
    is_prefilling: np.ndarray  # still in (chunked) prefill at the start of the step
    new_block_counts: np.ndarray  # new block ids per scheduled request ...
    new_block_ids: np.ndarray  # ... concatenated in the same order
    new_block_rows: np.ndarray | None = None  # the scheduled requests with new blocks (None: not given)
    new_inst: list = field(default_factory=list)  # (instance, request) pairs to add before this step
    removed_inst: list = field(default_factory=list)  # instances finished or preempted since last step
    prefill_len: np.ndarray | None = None  # per scheduled request: prompt, or prompt + output after a preemption
    scheduler_step: int = 0  # the scheduler's clock at this step (arrival_step is given in it)


class Scheduler:
    # Run the running requests' pass as lab/engine/plain.py's loop every step, not only when someone
    # must be preempted (tests/test_plain_rules.py compares the two).
    always_plain = False

    def __init__(self, scenario):
        s = scenario
        self.scenario = s
        n = len(s.requests)
        self.arrival_step = np.array([r.arrival_step for r in s.requests], dtype=np.int64)
        self.prompt_len = np.array([r.prompt_len for r in s.requests], dtype=np.int64)
        self.output_len = np.array([r.output_len for r in s.requests], dtype=np.int64)
        # Requests in arrival order and their arrival steps, as Python ints: one arrival a step
        # (churn) is then a list read, not numpy scalar indexing.
        order = np.argsort(self.arrival_step, kind="stable")
        self._arrival_order = order.tolist()
        self._arrival_steps = self.arrival_step[order].tolist()
        self._next_arrival = 0
        self.max_model_len = s.max_model_len
        self.block_size = s.block_size
        self._block_shift = s.block_size.bit_length() - 1  # block_size is a power of two
        self.max_num_blocks_per_req = s.max_num_blocks_per_req
        # Drafts scheduled per decoding request (K), and the KV slots reserved past the scheduled tokens
        # (VllmConfig.num_lookahead_tokens: K, 1 + K for DFlash, 0 for n-gram/extract-hidden-states).
        self.num_spec_tokens_per_step = s.num_speculative_tokens
        self.num_lookahead_tokens = num_lookahead_tokens(s.speculative_method, s.num_speculative_tokens)
        self.token_budget = s.max_num_batched_tokens
        self.max_num_running_reqs = s.max_num_seqs
        self.async_scheduling = s.async_scheduling

        self.prefill_len = self.prompt_len.copy()  # prompt, or prompt + output after a preemption
        self.num_computed_tokens = np.zeros(n, dtype=np.int64)  # CPU view, optimistic
        # The previous step's rejected drafts, which the CPU learns after scheduling the next step.
        self._pending: tuple[np.ndarray, np.ndarray] | None = None
        # A request stops at output_len tokens, or when its length reaches max_model_len.
        self.max_output_tokens = np.minimum(self.output_len, self.max_model_len - self.prompt_len)
        self.num_output_tokens = np.zeros(n, dtype=np.int64)
        self.num_spec_tokens = np.zeros(n, dtype=np.int64)  # drafts waiting to be verified
        self.status = np.full(n, WAITING, dtype=np.int8)
        self.inst = np.full(n, -1, dtype=np.int64)
        self.inst_req: list[int] = []  # instance id -> request index
        self.waiting: deque[int] = deque()
        self.running = np.empty(0, dtype=np.int64)
        self.num_finished = 0
        self.num_preemptions = 0

        # KVCacheManager: the pool, and each running request's blocks (by kv slot).
        rel = release(s.vllm_version)
        self.pool = BlockPool(s.total_num_gpu_blocks, lifo=rel.free_queue_lifo)
        # K lookahead slots in a waiting request's first allocation (0.32/0.33), or none (0.19/0.22).
        self.first_allocation_lookahead = self.num_lookahead_tokens if rel.lookahead_on_first_allocation else 0
        # Input slots each scheduled request keeps for its drafter (DFlash K, DSpark K - 1, draft model 1,
        # else 0): Scheduler.schedule spends them from input_budget beside the token budget.
        self.draft_slots = max_num_new_slots_for_drafting(
            s.speculative_method, s.num_speculative_tokens, rel.parallel_drafting_slots
        )
        self.input_budget = s.max_num_batched_tokens
        # Without chunked prefill (chunked=off, or an encoder state: Scenario.runs_chunked_prefill)
        # Scheduler.schedule stops admitting at a prompt that does not fit the budget left ("If
        # chunked_prefill is disabled, we can stop the scheduling here").
        self.chunked_prefill = s.runs_chunked_prefill
        # Encoder-only attention needs no KV cache (model_states/encoder_only.py): no KV cache groups, no blocks.
        self.has_kv_cache = s.model_state != "encoder_only"
        self.kv_rows = np.zeros((s.max_num_seqs, self.max_num_blocks_per_req), dtype=np.intp)  # as the pool's ids
        self.kv_nb = np.zeros(s.max_num_seqs, dtype=np.int64)
        self.kv_slot = np.full(n, -1, dtype=np.int64)
        self._free_kv_slots = list(range(s.max_num_seqs - 1, -1, -1))
        self._removed: list[int] = []
        # Read-only fills for the rows of new requests (sliced, never written).
        self._zeros = np.zeros(s.max_num_seqs, dtype=np.int64)
        self._trues = np.ones(s.max_num_seqs, dtype=bool)
        self._rows_from = np.arange(s.max_num_seqs, dtype=np.intp)

    # ---- state -------------------------------------------------------------------------------
    def has_unfinished_requests(self) -> bool:
        return self.num_finished < len(self.prompt_len)

    def next_arrival_step(self) -> int:
        if self._next_arrival < len(self._arrival_order):
            return self._arrival_steps[self._next_arrival]
        return 0

    def blocks_for(self, num_tokens):
        """Blocks for ``num_tokens`` slots: vllm/v1/core/kv_cache_manager.py ``allocate_slots`` caps the
        slots at max_model_len (``num_tokens_need_slot``), then cdiv by block_size (a power of two). A model
        without KV cache groups (encoder-only) gets none."""
        if not self.has_kv_cache:
            return num_tokens * 0
        return (np.minimum(num_tokens, self.max_model_len) + (self.block_size - 1)) >> self._block_shift

    def allocate(self, slot: int, inst: int, num_blocks: int) -> np.ndarray:
        """``num_blocks`` new blocks for the request in kv slot ``slot`` (runner instance ``inst``)."""
        ids = self.pool.get_new_blocks(num_blocks)
        nb = int(self.kv_nb[slot])
        self.kv_rows[slot, nb : nb + num_blocks] = ids
        self.kv_nb[slot] = nb + num_blocks
        self.pool.owner[ids] = inst
        return ids

    def _free(self, r: int) -> None:
        # vllm single_type_kv_cache_manager.py free: tail blocks first.
        slot = int(self.kv_slot[r])
        self.pool.free_blocks(self.kv_rows[slot, : int(self.kv_nb[slot])][::-1])  # read at once, not kept
        self.kv_nb[slot] = 0
        self._free_kv_slots.append(slot)
        self.kv_slot[r] = -1
        self._removed.append(int(self.inst[r]))
        self.inst[r] = -1

    def preempt_request(self, r: int) -> None:
        """vllm scheduler.py ``_preempt_request``: free its blocks; it waits at the front, to recompute."""
        self._free(r)
        self.status[r] = WAITING
        self.prefill_len[r] = self.prompt_len[r] + self.num_output_tokens[r]
        self.num_computed_tokens[r] = 0
        if self._pending is not None:
            self._pending[1][self._pending[0] == r] = 0
        self.num_spec_tokens[r] = 0
        self.waiting.appendleft(r)
        self.num_preemptions += 1

    # ---- scheduling --------------------------------------------------------------------------
    def schedule(self, step: int) -> SchedulerOutput:
        """One scheduling pass at clock ``step`` (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``).

        Admits the requests that have arrived, gives each running request ``min(tokens it needs,
        budget left)`` in running order (prefill chunks, or 1 + its drafts when decoding), allocates
        the blocks those tokens and the K lookahead slots need (preempting the last running request
        when the pool runs dry), then admits waiting requests while budget, blocks and
        ``max_num_seqs`` allow. Returns what the runner executes; ``num_computed_tokens`` then
        advances optimistically (async scheduling, R1).
        """
        # The requests that have arrived join the waiting queue.
        while self._next_arrival < len(self._arrival_order) and self._arrival_steps[self._next_arrival] <= step:
            self.waiting.append(self._arrival_order[self._next_arrival])
            self._next_arrival += 1
        # "First, schedule the RUNNING requests."
        self.input_budget = self.token_budget
        running = self._schedule_running(self.token_budget)
        # "Next, schedule the WAITING requests." (vLLM admits none in a step that preempted one)
        admitted = self._schedule_waiting(running.budget) if not running.preempted and self.waiting else None
        out = self._make_output(step, running, admitted)
        self._update_after_schedule(out)
        return out

    def _schedule_running(self, budget: int) -> _RunningPass:
        """The running requests' pass: lab/engine/plain.py ``schedule_running`` says it one request at
        a time, and runs whenever the pool cannot cover every request's new blocks (preemption).
        Otherwise nobody is preempted and the pass is the same arithmetic on arrays: each request in
        running order takes ``min(need, budget left)`` (a running sum), then its new blocks."""
        mml, k = self.max_model_len, self.num_lookahead_tokens
        run = self.running
        comp = self.num_computed_tokens[run]
        prefill_len = self.prefill_len[run]
        in_prefill = comp < prefill_len
        any_prefill = np.count_nonzero(in_prefill) > 0
        drafting = self.num_spec_tokens_per_step
        decode_need = 1 + self.num_spec_tokens[run] if drafting else np.ones(len(run), dtype=np.int64)
        need = np.where(in_prefill, prefill_len - comp, decode_need) if any_prefill else decode_need
        np.minimum(need, mml - 1 - comp, out=need)
        np.maximum(need, 0, out=need)
        cum = np.add.accumulate(need)
        if len(cum) == 0 or cum[-1] <= budget:
            num_new = need  # everyone gets what they need
        else:
            num_new = np.minimum(np.maximum(budget - (cum - need), 0), need)  # min(need, budget left)
        slots = self.kv_slot[run]
        cur = self.kv_nb[slots]
        inst = self.inst[run]  # the runner instances, for the owners of new blocks and the output
        new_blocks = np.maximum(self.blocks_for(comp + num_new + k) - cur, 0)
        all_scheduled = np.count_nonzero(num_new) == len(num_new)
        if not all_scheduled:
            new_blocks[num_new == 0] = 0
        total_new = int(np.add.reduce(new_blocks))
        # The plain loop when someone must be preempted, or when requests keep input slots for drafting.
        if self.always_plain or self.draft_slots or total_new > self.pool.num_free_blocks:
            run, num_new, counts, chunks, budget, self.input_budget, preempted = schedule_running(self, budget)
            self.running = run
            comp = self.num_computed_tokens[run]
            in_prefill = comp < self.prefill_len[run]
            any_prefill = bool(in_prefill.any())
            plain = _RunningPass(
                req=run,
                num_new=num_new,
                counts=counts,
                chunks=chunks,
                budget=budget,
                preempted=preempted,
                comp=comp,
                in_prefill=in_prefill,
                inst=self.inst[run],
                any_prefill=any_prefill,
            )
            return plain.scheduled_only()
        ids = self.pool.get_new_blocks(total_new) if total_new else _NONE
        rows = _NONE
        if total_new:
            rows = new_blocks.nonzero()[0]
            slots_has, cur_has = slots[rows], cur[rows]
            if total_new == len(rows):  # one block each (decodes crossing a block boundary)
                self.kv_rows[slots_has, cur_has] = ids
                self.pool.owner[ids] = inst[rows]
                self.kv_nb[slots_has] = cur_has + 1
            else:
                group, cols = ragged_ranges(cur_has, new_blocks[rows])
                self.kv_rows[slots_has[group], cols] = ids
                self.pool.owner[ids] = inst[rows][group]
                self.kv_nb[slots_has] = cur_has + new_blocks[rows]
        budget -= int(np.add.reduce(num_new))
        running = _RunningPass(
            req=run,
            num_new=num_new,
            counts=new_blocks,
            chunks=[ids],
            budget=budget,
            preempted=0,
            comp=comp,
            in_prefill=in_prefill,
            inst=inst,
            any_prefill=any_prefill,
            rows=rows,
        )
        return running if all_scheduled else running.scheduled_only()

    def _schedule_waiting(self, budget: int) -> _Admissions | None:
        """Admit waiting requests in order while there is budget, room under ``max_num_seqs`` and
        blocks for their first chunk. A new request's first allocation includes the K lookahead
        slots too (vllm scheduler.py schedule(): ``allocate_slots(..., num_lookahead_tokens=
        effective_lookahead_tokens)``), from 0.32 on; 0.19/0.22 allocate none while
        ``num_computed_tokens == 0`` (lab/history.py). None: nobody was admitted."""
        req, tokens, counts, chunks, inst = [], [], [], [], []
        k0, mml = self.first_allocation_lookahead, self.max_model_len
        room = self.max_num_running_reqs - len(self.running)
        slots = self.draft_slots
        while self.waiting and len(req) < room and budget > 0:
            if slots and self.input_budget <= slots:  # "input_budget <= draft_slots": no room for its drafter
                break
            r = self.waiting[0]
            if not self.chunked_prefill and int(self.prefill_len[r]) > budget:
                break
            n_tok = min(int(self.prefill_len[r]), budget, self.input_budget - slots if slots else budget)
            nblk = (min(n_tok + k0, mml) + self.block_size - 1) >> self._block_shift  # blocks_for, on ints
            if not self.has_kv_cache:
                nblk = 0
            if nblk > self.pool.num_free_blocks:
                break
            self.waiting.popleft()
            slot, new_id = self._free_kv_slots.pop(), len(self.inst_req)
            self.kv_slot[r] = slot
            self.inst[r] = new_id
            self.inst_req.append(r)
            self.status[r] = RUNNING
            chunks.append(self.allocate(slot, new_id, nblk))
            req.append(r)
            tokens.append(n_tok)
            counts.append(nblk)
            inst.append((new_id, r))
            budget -= n_tok
            self.input_budget -= n_tok + slots
        return _Admissions(req, tokens, counts, chunks, inst) if req else None

    def _make_output(self, step: int, running: _RunningPass, admitted: _Admissions | None) -> SchedulerOutput:
        """The scheduled running requests, then the admitted ones (their prefill chunk and first
        blocks, nothing computed, no drafts), as the runner receives them."""
        req, num_new, counts, comp = running.req, running.num_new, running.counts, running.comp
        in_prefill, inst, rows = running.in_prefill, running.inst, running.rows
        num_draft = None  # without drafts: zeros, once the admissions are known
        if self.num_spec_tokens_per_step:
            num_draft = np.minimum(self.num_spec_tokens[req], np.maximum(num_new - 1, 0))
            if running.any_prefill:
                num_draft[in_prefill] = 0
        chunks, new_inst = running.chunks, []
        if admitted is not None:
            chunks, new_inst = chunks + admitted.chunks, admitted.inst
            m = len(admitted.req)
            every_running_scheduled = req is self.running
            self.running = np.concatenate([self.running, np.array(admitted.req, dtype=np.int64)])
            req = self.running if every_running_scheduled else np.concatenate([req, admitted.req])
            if rows is not None:  # every admitted request gets its first blocks
                rows = np.concatenate([rows, self._rows_from[len(num_new) : len(num_new) + m]])
            num_new = np.concatenate([num_new, admitted.tokens])
            counts = np.concatenate([counts, admitted.counts])
            comp = np.concatenate([comp, self._zeros[:m]])
            inst = np.concatenate([inst, [i for i, _ in admitted.inst]])
            in_prefill = np.concatenate([in_prefill, self._trues[:m]])
            if num_draft is not None:
                num_draft = np.concatenate([num_draft, self._zeros[:m]])
        if num_draft is None:
            num_draft = np.zeros(len(req), dtype=np.int64)
        out = SchedulerOutput(
            req_nums=req,
            inst=inst,
            num_scheduled_tokens=num_new,
            num_computed_tokens=comp,
            num_draft_tokens=num_draft,
            is_prefilling=in_prefill,
            new_block_counts=counts,
            new_block_rows=rows,
            new_block_ids=chunks[0] if len(chunks) == 1 else np.concatenate(chunks) if chunks else _NONE,
            new_inst=new_inst,
            removed_inst=self._removed,
            prefill_len=self.prefill_len[req],
            scheduler_step=step,
        )
        self._removed = []
        return out

    def _update_after_schedule(self, out: SchedulerOutput) -> None:
        """vllm scheduler.py ``_update_after_schedule``: ``num_computed_tokens`` advances by the
        scheduled tokens before the step runs (async scheduling); only then does the CPU learn the
        previous step's rejected drafts (R1's lag)."""
        self.num_computed_tokens[out.req_nums] += out.num_scheduled_tokens
        if self._pending is not None:
            self.num_computed_tokens[self._pending[0]] -= self._pending[1]
            self._pending = None

    # ---- results -----------------------------------------------------------------------------
    def update_from_output(self, out: SchedulerOutput, num_accepted: np.ndarray) -> np.ndarray:
        """Count sampled tokens, note rejections, finish requests. Returns finished request indices."""
        req = out.req_nums
        if len(req) == 0:
            return req
        sampled = 1 + num_accepted.astype(np.int64)
        if np.count_nonzero(out.is_prefilling):
            # out.prefill_len: this step's (a preemption changes it only in a later schedule()).
            done_prefill = out.num_computed_tokens + out.num_scheduled_tokens >= out.prefill_len
            sampled -= out.is_prefilling > done_prefill  # a prefill chunk samples once, when it completes the prompt
        limit = self.max_output_tokens[req]
        num_output = np.minimum(self.num_output_tokens[req] + sampled, limit)
        self.num_output_tokens[req] = num_output
        if self.num_spec_tokens_per_step:
            decode = ~out.is_prefilling
            rejected = np.where(decode, out.num_draft_tokens - num_accepted, 0)
            if self.async_scheduling:
                self._pending = (req, rejected)  # learnt after the next step is scheduled (R1)
            else:
                self.num_computed_tokens[req] -= rejected  # synchronous: known before the next step
            self.num_spec_tokens[req] = np.where(sampled > 0, self.num_spec_tokens_per_step, 0)
        finished = req[num_output >= limit]
        if len(finished):
            done = finished.tolist()
            for r in done:
                self._free(r)
            self.status[finished] = FINISHED
            self.num_finished += len(done)
            if len(done) == 1:
                self.running = self.running[self.running != done[0]]
            else:
                self.running = self.running[self.status[self.running] == RUNNING]
        return finished
