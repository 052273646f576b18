"""What the live recorder reads out of vLLM's Model Runner V2 while it runs: one ``LiveStep`` per
``execute_model`` (and the ``sample_tokens`` that follows it), through the hooks of lab/real_vllm/live/hooks.py.

Every wrapper calls vLLM's own function; the only changes to what vLLM does are the two the lab asks
for: in ``baseline`` mode the patched ``build_attn_metadata`` call sites pass ``max_model_len`` (PR
#43991 and #40654 reverted at run time), and ``sample`` is given the scenario's acceptance (dummy
weights accept almost no drafts; vLLM's own MRV2 test tests/v1/e2e/_mamba_prefix_cache.py does the
same). Nothing here imports vllm: the wrappers receive vLLM's objects.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from lab.engine.cudagraph import CudaGraphManager
from lab.engine.speculator import TargetDependentARSpeculator
from lab.history import LIVE_SERIES, release
from lab.speculators import speculator


@dataclass
class LiveStep:
    """One engine step as vLLM's runner executed it (batch order; ``n`` real rows, ``n_pad`` padded)."""

    scheduler_step: int
    removed: list = field(default_factory=list)  # (req_id, req_index, block ids) before the step
    added: list = field(default_factory=list)  # (req_id, req_index)
    idle: bool = True
    req_ids: list = field(default_factory=list)  # [n]
    idx_mapping: np.ndarray | None = None  # [n] request slots
    num_computed_tokens: np.ndarray | None = None  # [n] the runner's CPU view
    num_scheduled_tokens: np.ndarray | None = None  # [n]
    num_draft_tokens: np.ndarray | None = None  # [n]
    seq_lens: np.ndarray | None = None  # [n_pad]
    seq_lens_cpu_upper_bound: np.ndarray | None = None  # [n_pad]
    num_reqs: int = 0
    num_reqs_padded: int = 0
    num_tokens: int = 0
    num_tokens_padded: int = 0
    cg_mode: str = "NONE"
    block_table: np.ndarray | None = None  # [n_pad, width] the gathered input table
    num_blocks: np.ndarray | None = None  # [n]
    max_seq_len: int | None = None  # what the target build_attn_metadata received
    attn_num_reqs: int | None = None
    num_accepted: np.ndarray | None = None  # [n] imposed
    draft_descs: list = field(default_factory=list)  # (cg_mode, num_reqs_padded) per dispatch: prefill, decode
    draft_passes: list = field(default_factory=list)  # (max_seq_len, num_reqs, ub) per draft decode pass
    draft_max_seq_len: int | None = None
    attn_ms: dict = field(default_factory=lambda: {"target": [], "draft": []})  # per layer call
    preempted: list = field(default_factory=list)  # req_ids preempted since the previous step
    live_blocks: dict = field(default_factory=dict)  # req_id -> its blocks, every request the runner holds


class Acceptance:
    """The embedded engine's acceptance draws (lab/engine/speculator.py ``TargetDependentARSpeculator.verify``),
    replayed in the same order: one draw matrix per step, rows in batch order."""

    def __init__(self, scenario):
        self.k = scenario.num_speculative_tokens
        self.rng = np.random.default_rng(scenario.seed)
        self.spec = (
            TargetDependentARSpeculator(
                self.k, scenario.max_model_len, scenario.acceptance_rate, CudaGraphManager("NONE", [], 1, 1)
            )
            if self.k
            else None
        )

    def draw(self, num_draft_tokens: np.ndarray) -> np.ndarray:
        return self.spec.verify(self.rng, num_draft_tokens.astype(np.int64))


def _np(t, n=None):
    a = t.detach().to("cpu").numpy() if hasattr(t, "detach") else np.asarray(t)
    return (a if n is None else a[:n]).copy()


class Tap:
    """The hook wrappers, and the steps they recorded. ``active`` only between ``begin`` and ``end``."""

    def __init__(self, scenario, mode: str, time_attention: bool = True, series: str = LIVE_SERIES):
        self.scenario = scenario
        self.series = series
        self.spec_tokens: dict = {}  # the step's scheduled draft tokens, by req_id (InputBatch < 0.20 lacks them)
        self.mode = mode
        self.max_model_len = scenario.max_model_len
        self.time_attention = time_attention
        self.acceptance = Acceptance(scenario)
        self.steps: list[LiveStep] = []
        self.cur: LiveStep | None = None
        self.phase = "target"
        self.runner = None
        self.truncated = False
        self.hybrid = False

    # ---- step boundaries (the driver) -----------------------------------------------------------
    def begin(self, scheduler_step: int) -> None:
        self.cur = LiveStep(scheduler_step)
        self.phase = "target"

    def end(self) -> LiveStep | None:
        step, self.cur = self.cur, None
        k = self.scenario.num_speculative_tokens
        if (
            step is not None
            and len(step.draft_passes) == 1
            and k > 2
            and release(self.series).draft_decode_metadata_once
        ):
            # 0.19 builds the draft decode metadata once per step (EagleSpeculator.propose) and every one
            # of the K - 1 decode passes (generate_draft) runs with it (lab/history.py).
            step.draft_passes = step.draft_passes * (k - 1)
        if step is not None and (not step.idle or step.removed or step.added):
            self.steps.append(step)
        return step

    # ---- wrappers, by hook name (lab/real_vllm/live/hooks.py) --------------------------------------------
    def wrappers(self) -> dict:
        w = {
            "execute_model": self._execute_model,
            "prepare_attn": self._prepare_attn,
            "sample": self._sample,
            "target_build_attn_metadata": self._build_attn_metadata("target"),
            "draft_build_attn_metadata": self._build_attn_metadata("draft"),
        }
        if not release(self.series).dispatch_cg_and_sync_dp:
            w["target_batch_desc"] = self._prepare_inputs
            w["draft_decode_dispatch"] = self._dispatch("draft_decode")
        else:
            w["target_dispatch"] = self._dispatch("target")
            w["draft_dispatch"] = self._dispatch("draft")
        # The speculators whose draft graphs vLLM dispatches through a call of their own (their record's
        # LiveNeeds.dispatch_hook: multi-module MTP's, the DFlash family's; lab/real_vllm/live/hooks.py).
        hook = speculator(self.scenario.speculative_method).live.dispatch_hook
        if hook:
            w[hook] = self._dispatch("draft")
        if self.time_attention:
            w["attention_forward"] = self._attention_forward
        if self.hybrid:  # GPU only (the tiny hybrid fails on the CPU): MambaHybridModelState's call site
            w["mamba_build_attn_metadata"] = self._build_attn_metadata("target")
        return w

    def _execute_model(self, orig):
        tap = self

        def execute_model(runner, scheduler_output, *args, **kwargs):
            dummy = kwargs.get("dummy_run", args[1] if len(args) > 1 else False)
            step = tap.cur
            if step is None or dummy:
                return orig(runner, scheduler_output, *args, **kwargs)
            tap.runner = runner
            so = scheduler_output
            gone = set(so.finished_req_ids) | set(so.preempted_req_ids or ())
            step.preempted = sorted(so.preempted_req_ids or ())
            tap.spec_tokens = dict(so.scheduled_spec_decode_tokens or {})
            bt = runner.block_tables
            # MRV2's finish_requests removes them in sorted(req_id) order: so do we.
            for rid in sorted(gone):
                idx = runner.req_states.req_id_to_index.get(rid)
                if idx is not None:
                    nb = int(bt.num_blocks.np[0, idx])
                    step.removed.append((rid, int(idx), _np(bt.block_tables[0].gpu[idx, :nb])))
            out = orig(runner, scheduler_output, *args, **kwargs)
            for new in so.scheduled_new_reqs:
                step.added.append((new.req_id, int(runner.req_states.req_id_to_index[new.req_id])))
            return out

        return execute_model

    def _prepare_attn(self, orig):
        tap = self

        def prepare_attn(runner, input_batch):
            block_tables, slot_mappings = orig(runner, input_batch)
            step = tap.cur
            if step is not None:
                b = input_batch
                n, n_pad = b.num_reqs, b.num_reqs_after_padding
                step.idle = False
                step.req_ids = list(b.req_ids)
                step.idx_mapping = np.asarray(b.idx_mapping_np[:n], dtype=np.int64).copy()
                step.num_computed_tokens = tap._num_computed_tokens(runner, b, n)
                step.num_scheduled_tokens = np.asarray(b.num_scheduled_tokens[:n]).copy()
                step.num_draft_tokens = tap._draft_counts(b, n)
                step.seq_lens = _np(b.seq_lens, n_pad)
                ub = getattr(b, "seq_lens_cpu_upper_bound", None)
                if ub is None:
                    # < 0.20 (before #40654) has no upper bound: R1's own arithmetic, num_computed_tokens +
                    # num_scheduled_tokens with padded rows 0, as 0.20's prepare_inputs computes it.
                    ub = np.zeros(n_pad, np.int32)
                    ub[:n] = step.num_computed_tokens + step.num_scheduled_tokens
                step.seq_lens_cpu_upper_bound = _np(ub, n_pad)
                step.num_reqs, step.num_reqs_padded = n, n_pad
                step.num_tokens, step.num_tokens_padded = int(b.num_tokens), int(b.num_tokens_after_padding)
                step.block_table = _np(block_tables[0], n_pad)
                step.num_blocks = runner.block_tables.num_blocks.np[0, step.idx_mapping].astype(np.int64)
                # Every live request's blocks (scheduled or not): who owns each block id this step.
                bt = runner.block_tables
                step.live_blocks = {
                    rid: _np(bt.block_tables[0].gpu[idx, : int(bt.num_blocks.np[0, idx])])
                    for rid, idx in runner.req_states.req_id_to_index.items()
                }
            return block_tables, slot_mappings

        return prepare_attn

    def _draft_counts(self, b, n: int) -> np.ndarray:
        """Draft tokens each batch row verifies: the InputBatch's (0.20+) or the scheduler output's (0.19)."""
        if hasattr(b, "num_draft_tokens_per_req"):
            ndt = b.num_draft_tokens_per_req
            return np.zeros(n, np.int64) if ndt is None else np.asarray(ndt[:n], dtype=np.int64).copy()
        return np.array([len(self.spec_tokens.get(r, ())) for r in b.req_ids[:n]], dtype=np.int64)

    @staticmethod
    def _num_computed_tokens(runner, b, n: int) -> np.ndarray:
        """The runner's num_computed_tokens of each batch row before the step: the InputBatch's CPU view
        (0.23+), else the request states' CPU mirror (0.20-0.22), else their device tensor (0.19)."""
        if hasattr(b, "num_computed_tokens_np"):
            return np.asarray(b.num_computed_tokens_np[:n]).copy()
        rs = runner.req_states
        idx = np.asarray(b.idx_mapping_np[:n], dtype=np.int64)
        if hasattr(rs, "num_computed_tokens_np"):
            return np.asarray(rs.num_computed_tokens_np[idx]).copy()
        return _np(rs.num_computed_tokens.gpu)[idx]

    def _prepare_inputs(self, orig):
        """0.19: the target's batch descriptor, as prepare_inputs receives it."""
        tap = self

        def prepare_inputs(runner, scheduler_output, batch_desc, *args, **kwargs):
            if tap.cur is not None:
                tap.cur.cg_mode = getattr(batch_desc.cg_mode, "name", str(batch_desc.cg_mode))
            return orig(runner, scheduler_output, batch_desc, *args, **kwargs)

        return prepare_inputs

    def _dispatch(self, where: str):
        tap = self

        def wrap(orig):
            def dispatch_cg_and_sync_dp(*args, **kwargs):
                desc, sync = orig(*args, **kwargs)
                step = tap.cur
                if step is not None:
                    mode = getattr(desc.cg_mode, "name", str(desc.cg_mode))
                    if where == "target":
                        step.cg_mode = mode
                    else:
                        if where == "draft_decode":  # 0.19: the draft prefill ran eagerly, undispatched
                            step.draft_descs.append(("NONE", None))
                        step.draft_descs.append((mode, desc.num_reqs))
                return desc, sync

            return dispatch_cg_and_sync_dp

        return wrap

    def _build_attn_metadata(self, where: str):
        tap = self

        def wrap(orig):
            def build_attn_metadata(*args, **kwargs):
                step = tap.cur
                if step is None or kwargs.get("for_cudagraph_capture"):
                    return orig(*args, **kwargs)
                if tap.mode == "baseline":
                    # PR #43991 and #40654 reverted at run time: the call site passes max_model_len.
                    kwargs["max_seq_len"] = tap.max_model_len
                msl, nr = int(kwargs["max_seq_len"]), int(kwargs["num_reqs"])
                if where == "target":
                    step.max_seq_len, step.attn_num_reqs = msl, nr
                else:
                    ub = kwargs.get("seq_lens_cpu_upper_bound")
                    step.draft_passes.append((msl, nr, None if ub is None else _np(ub)))
                return orig(*args, **kwargs)

            return build_attn_metadata

        return wrap

    def _sample(self, orig):
        tap = self

        def sample(runner, hidden_states, input_batch, grammar_output):
            out = orig(runner, hidden_states, input_batch, grammar_output)
            step = tap.cur
            if step is None:
                return out
            n = input_batch.num_reqs
            drafts = tap._draft_counts(input_batch, n)
            accepted = tap.acceptance.draw(drafts) if tap.acceptance.k else np.zeros(n, np.int32)
            step.num_accepted = np.asarray(accepted, dtype=np.int64)
            sampler_output, num_sampled, num_rejected = out
            has = np.nonzero(drafts > 0)[0]
            if len(has):
                import torch

                dev = num_sampled.device
                rows = torch.from_numpy(has).to(dev)
                acc = torch.from_numpy(step.num_accepted[has]).to(dev, num_sampled.dtype)
                num_sampled[rows] = acc + 1
                num_rejected[rows] = torch.from_numpy(drafts[has]).to(dev, num_rejected.dtype) - acc
                tokens = sampler_output.sampled_token_ids
                for r in has.tolist():
                    a = int(step.num_accepted[r])
                    tokens[r, 1 : a + 1] = tokens[r, 0]  # any valid id: only the count is read
            tap.phase = "draft"
            return out

        return sample

    def _attention_forward(self, orig):
        tap = self

        def forward(*args, **kwargs):
            step = tap.cur
            if step is None:
                return orig(*args, **kwargs)
            t0 = time.perf_counter()
            out = orig(*args, **kwargs)
            step.attn_ms[tap.phase].append((time.perf_counter() - t0) * 1e3)
            return out

        return forward
