"""vLLM 0.33.0's MRV2 objects on a scenario, with or without a patch, every value they produce kept: the
conformance harness (lab/real_vllm/conform/) driven step by step with a ``ValueLog`` in place of its
``Comparison``, so that a patched run can be compared with the unpatched one field by field.

The standalone draft model (``StandaloneARSpeculator``) also runs its whole ``propose`` each step
(``ProposeRun``): the prefill kernel (``prepare_prefill_inputs``, Triton, interpreted), the slot mappings
and every ``_build_attn_metadata`` call, with the draft model and its sampler replaced by zeros. What each
draft pass is told (``max_seq_len``) and what its requests need (the ``seq_lens`` vLLM hands the kernel)
are read from those calls: a patch anywhere on that path is seen. Runs in ``.venv-vllm`` only.
"""

from __future__ import annotations

import hashlib
from contextlib import ExitStack
from types import SimpleNamespace

import numpy as np

from lab.real_vllm.conform.agreement import Comparison
from lab.real_vllm.conform.recording import record_engine
from lab.real_vllm.conform.vllm_config import vllm_capture_sizes
from lab.real_vllm.conform.vllm_mrv2 import VllmMRV2, load_vllm
from lab.real_vllm.conform.vllm_speculators import _replaced

STANDALONE = "StandaloneARSpeculator"


def _plain(value):
    """A value the harness compares, as JSON: arrays as lists, tables by digest (they are compared whole)."""
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            return {"shape": list(value.shape), "sha1": hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()}
        return value.tolist()
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    return value


class ValueLog(Comparison):
    """A ``Comparison`` that also keeps every value vLLM's side produced, in order: [step, rule, field, value]."""

    def __init__(self):
        super().__init__()
        self.values: list[list] = []

    def check(self, step, rule, fld, lab, vllm) -> None:
        self.values.append([step, rule, fld, _plain(vllm)])
        super().check(step, rule, fld, lab, vllm)

    def keep(self, step, rule, fld, vllm) -> None:
        """A value kept without a lab value to compare it with."""
        self.values.append([step, rule, fld, _plain(vllm)])

    def check_table(self, step, rule, fld, lab, vllm) -> None:
        self.values.append([step, rule, fld, _plain(vllm)])
        super().check_table(step, rule, fld, lab, vllm)


class ProposeRun:
    """``StandaloneARSpeculator.propose`` run whole on each step, before the harness's own comparison of
    the step's draft passes; each ``build_attn_metadata`` call it makes is one draft pass here."""

    def __init__(self, vl):
        self.vl = vl
        self.passes: list[dict] = []  # one per draft pass: step, pass, told, need, upper bounds, ...
        V, drafts = vl.V, vl.drafts
        torch = V.torch
        sp = self.sp = drafts.sp
        k, max_reqs = vl.k, vl.max_num_reqs
        # The draft model and its sampler are not what is checked: zeros in their place.
        sp.model = SimpleNamespace()
        sp._copy_request_inputs = lambda *a, **kw: None
        sp._run_model = lambda input_ids, *a, **kw: torch.zeros(input_ids.shape[0], 1)
        sp.sample_draft = lambda hidden_states, *a, **kw: torch.zeros(hidden_states.shape[0], dtype=torch.int64)
        sp.draft_tokens = torch.zeros(max_reqs, k, dtype=torch.int64)
        sp.idx_mapping = torch.zeros(max_reqs, dtype=torch.int64)
        sp.temperature = sp.seeds = sp.draft_logits = None
        sp.kv_cache_config = SimpleNamespace(kv_cache_groups=[])
        groups = vl.block_tables.num_kv_cache_groups
        sp.expanded_slot_mappings = torch.zeros(groups, sp.max_num_tokens + max_reqs, dtype=torch.int64)
        self.module = drafts.module
        original = drafts.compare

        def compare(rec, cmp, batch, state, desc, target_msl, ub):
            self.run(rec, batch)
            original(rec, cmp, batch, state, desc, target_msl, ub)

        drafts.compare = compare

    def run(self, rec, batch) -> None:
        V, vl, sp = self.vl.V, self.vl, self.sp
        torch = V.torch
        n = batch.num_reqs
        calls: list[dict] = []

        def build_attn_metadata(**kw):
            # Copied now: seq_lens is a view of input_buffers.seq_lens, which the next pass advances.
            calls.append(
                {
                    "told": int(kw["max_seq_len"]),
                    "seq_lens": kw["seq_lens"][:n].tolist(),
                    "upper_bound": kw["seq_lens_cpu_upper_bound"][:n].tolist(),
                    "num_reqs": int(kw["num_reqs"]),
                    "num_tokens": int(kw["num_tokens"]),
                    "max_query_len": int(kw["max_query_len"]),
                    "query_start_loc": kw["query_start_loc_cpu"].tolist(),
                    "draft_max_seq_len": int(sp.draft_max_seq_len),
                }
            )
            return {}

        input_batch = SimpleNamespace(
            **vars(batch),
            input_ids=torch.zeros(max(batch.num_tokens_after_padding, batch.num_tokens), dtype=torch.int32),
        )
        with ExitStack() as stack:
            stack.enter_context(_replaced(V.spec_base, "build_attn_metadata", build_attn_metadata))
            stack.enter_context(_replaced(self.module, "build_slot_mappings_by_layer", lambda *a, **kw: {}))
            # No token was rejected: every draft length at its longest (what a pass can need at most).
            sp.propose(
                input_batch,
                {},
                {},
                None,
                None,
                torch.ones(n, dtype=torch.int32),
                torch.zeros(n, dtype=torch.int32),
                torch.zeros(vl.max_num_reqs, dtype=torch.int64),
                None,
                None,
                None,
            )
        ub = batch.seq_lens_cpu_upper_bound[:n].numpy()
        exact = batch.seq_lens[:n].tolist()  # the target's exact lengths (GPU side)
        for p, call in enumerate(calls):
            need = max(call["seq_lens"]) if call["seq_lens"] else 0
            self.passes.append(
                {
                    "step": rec.index,
                    "pass": p,
                    "need": int(need),
                    "max_ub": int(ub.max()),
                    "target_seq_lens": exact,
                    **call,
                }
            )


def capture_probe(vl) -> int:
    """R3: the ``max_seq_len`` a FULL graph of the target is captured with (``prepare_inputs_to_capture``,
    one decode request), whatever the scenario's graph mode: a patch must leave it at ``max_model_len``."""
    q = 1 + vl.k
    desc = SimpleNamespace(num_reqs=1, num_tokens=q, uniform_token_count=q, max_query_len=q)
    return vl._capture_max_seq_len(desc)


def run(scenario, kernels: bool = False) -> dict:
    """Every value vLLM's MRV2 objects produce on ``scenario`` (``kernels``: R6/R7's Triton kernels too)."""
    load_vllm()
    records = record_engine(scenario)
    sizes, max_size = vllm_capture_sizes(scenario)
    log = ValueLog()
    log.keep("config", "R8", "cudagraph_capture_sizes", sizes)
    vl = VllmMRV2(scenario, sizes, max_size)
    proposer = ProposeRun(vl) if vl.drafts is not None and vl.drafts.vllm_class == STANDALONE else None
    for rec in records:
        vl.step(rec, log, kernels)
    log.keep("config", "R3", "capture max_seq_len (probe)", capture_probe(vl))
    return {
        "values": log.values,
        "passes": proposer.passes if proposer else [],
        "speculator": vl.drafts.vllm_class if vl.drafts is not None else None,
        "steps": len(records),
        # Where vLLM's values differ from the lab's engine (unpatched 0.33.0: none, the conformance suite).
        "disagreements": [str(d) for d in log.disagreements[:50]],
    }
