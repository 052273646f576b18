"""vLLM 0.33.0's own speculators, fed one recorded engine step at a time: ``VllmDrafts.compare`` runs
the real ``propose`` of the scenario's speculator up to its first GPU work (``draft_max_seq_len``, R4),
the graph managers its own ``init_cudagraph_manager`` makes (R8), and its ``_build_attn_metadata`` for
every draft pass (R5), and compares each with the lab's draft passes.

=================  ==========================================================================
method             vLLM class run (vllm/v1/worker/gpu/spec_decode/)
=================  ==========================================================================
eagle, eagle3      eagle/speculator.py ``EagleSpeculator`` (a ``TargetDependentARSpeculator``)
mtp                mtp/speculator.py ``MTPSpeculator``
gemma4_mtp         gemma4/speculator.py ``Gemma4Speculator`` (``advance_draft_positions`` False)
mtp_multi_module   multi_module_mtp/speculator.py ``MultiModuleMTPSpeculator``
draft_model        standalone_ar/speculator.py ``StandaloneARSpeculator`` (its own ``__init__``)
=================  ==========================================================================
"""

from __future__ import annotations

import importlib
import inspect
from contextlib import contextmanager

import numpy as np

from lab.engine.speculator import draft_pass_step, draft_step_upper_bound

_CLASSES = {
    "eagle": ("eagle.speculator", "EagleSpeculator"),
    "eagle3": ("eagle.speculator", "EagleSpeculator"),
    "mtp": ("mtp.speculator", "MTPSpeculator"),
    "gemma4_mtp": ("gemma4.speculator", "Gemma4Speculator"),
    "mtp_multi_module": ("multi_module_mtp.speculator", "MultiModuleMTPSpeculator"),
    "draft_model": ("standalone_ar.speculator", "StandaloneARSpeculator"),
}
_PKG = "vllm.v1.worker.gpu.spec_decode."


class Captured(Exception):
    """Raised where ``propose`` reaches its first GPU work."""


@contextmanager
def _replaced(obj, name, value):
    saved = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, saved)


class VllmDrafts:
    def __init__(self, vl):
        self.vl = vl
        V, s = vl.V, vl.s
        self.method = s.speculative_method
        module, name = _CLASSES[self.method]
        self.module = importlib.import_module(_PKG + module)
        cls = getattr(self.module, name)
        if self.method == "draft_model":
            # The real StandaloneARSpeculator.__init__ (its "cap at max" line), over a parent __init__
            # that sets only what it reads (the parent's builds the draft model's config).
            def parent_init(sp, vllm_config, device):
                sp.vllm_config, sp.device = vllm_config, device
                sp.max_num_reqs, sp.max_num_tokens = s.max_num_seqs, s.max_num_batched_tokens

            with _replaced(V.spec_base.DraftModelSpeculator, "__init__", parent_init):
                sp = cls(vl.vllm_config, vl.device)
        else:
            sp = object.__new__(cls)
            sp.draft_max_seq_len = s.max_model_len  # DraftModelSpeculator.__init__
        self.sp = sp
        sp.vllm_config = vl.vllm_config
        sp.num_speculative_steps = vl.k
        sp.block_tables = vl.block_tables
        sp.input_buffers = vl.input_buffers
        sp.arange_np = np.arange(vl.max_num_reqs + 1, dtype=np.int32)
        sp.dcp_size = 1
        sp.attn_groups = []
        sp.kv_cache_config = None
        sp.draft_is_prefilling = V.torch.zeros(vl.max_num_reqs, dtype=V.torch.bool)

        def stop(*a, **kw):
            raise Captured

        sp._copy_request_inputs = stop  # the first GPU work in every propose
        # The managers the speculator's own init_cudagraph_manager makes: their mode and query length
        # are vLLM's; they are built without capture (VllmMRV2._manager).
        self.managers = []

        def manager(vllm_config, device, cudagraph_mode, decode_query_len):
            m = vl._manager(V.spec_cg.SpeculatorCudaGraphManager, cudagraph_mode, decode_query_len)
            self.managers.append(m)
            return m

        sp.device = vl.device
        home = inspect.getmodule(type(sp).init_cudagraph_manager)  # where the method reads the name
        with (
            _replaced(home, "SpeculatorCudaGraphManager", manager)
            if hasattr(home, "SpeculatorCudaGraphManager")
            else _replaced(V.spec_cg, "SpeculatorCudaGraphManager", manager)
        ):
            sp.init_cudagraph_manager(V.CUDAGraphMode[s.cudagraph_mode])

    def compare(self, rec, cmp, batch, state, desc, target_msl: int, ub: np.ndarray) -> None:
        V, vl, sp = self.vl.V, self.vl, self.sp
        n = batch.num_reqs
        # StandaloneARSpeculator's propose leaves draft_max_seq_len as its __init__ set it (and needs the
        # draft model first); the others set it before their first GPU work.
        if self.method != "draft_model":
            try:
                sp.propose(batch, {}, {}, None, None, None, None, None, None, None, None)
            except Captured:
                pass
        cmp.check(rec.index, "R4", "draft_max_seq_len", rec.draft_max_seq_len, int(sp.draft_max_seq_len))
        max_query_len = int(batch.num_scheduled_tokens.max())
        uniform0 = V.get_uniform_decode_token_count(n, batch.num_tokens, max_query_len, state.decode_graph_eligible)
        if self.method == "mtp_multi_module":
            # One metadata (step=0) for every module, on the target-shaped batch.
            (m,) = self.managers
            mdesc = m.dispatch(n, batch.num_tokens_after_padding, uniform0, 0)
            kw = self._metadata(sp._build_attn_metadata, n, mdesc, batch.query_start_loc_np, ub, 0)
            for d in rec.drafts:
                self._pass(rec, cmp, d, mdesc, kw, 0)
            return
        if self.method == "draft_model":
            # Eager only ("CUDA graph not yet supported"): pass 0 on the accepted tokens plus one
            # correction slot per request (step=0), pass k with "step=step + 1".
            assert not self.managers
            qsl = batch.query_start_loc_np[: n + 1] + np.arange(n + 1, dtype=np.int32)
            none = V.cg.BatchExecutionDescriptor(cg_mode=V.CUDAGraphMode.NONE, num_tokens=int(qsl[-1]), num_reqs=n)
            self._pass(rec, cmp, rec.drafts[0], none, self._metadata(sp._build_attn_metadata, n, none, qsl, ub, 0), 0)
            dec = V.cg.BatchExecutionDescriptor(V.CUDAGraphMode.NONE, n, n, uniform_token_count=1)
            for step in range(1, vl.k):
                kw = self._metadata(sp._build_uniform_attn_metadata, n, dec, 1, ub, step + 1)
                self._pass(rec, cmp, rec.drafts[step], dec, kw, step + 1)
            return
        # TargetDependentAR: the draft prefill (pass 0) on its own manager, dispatched as propose does.
        prefill_m, decode_m = self.managers
        pdesc = prefill_m.dispatch(n, batch.num_tokens_after_padding, uniform0, 0)
        d0 = rec.drafts[0]
        cmp.check(rec.index, "R8", "draft prefill cudagraph_mode", d0.cudagraph_mode, pdesc.cg_mode.name)
        cmp.check(rec.index, "R8", "draft prefill num_reqs_padded", d0.num_reqs_padded, pdesc.num_reqs or n)
        # Not FULL: the target's metadata is reused; FULL: the draft graph's capture metadata.
        d0_kernel = vl._capture_max_seq_len(pdesc) if pdesc.cg_mode == V.CUDAGraphMode.FULL else target_msl
        cmp.check(rec.index, "R5", "draft prefill max_seq_len", d0.max_seq_len["fixed"], target_msl)
        cmp.check(rec.index, "R5", "draft prefill kernel_max_seq_len", d0.kernel_max_seq_len["fixed"], d0_kernel)
        if vl.k <= 1:
            return
        ddesc = decode_m.specialize_spec_tokens(decode_m.dispatch(n, n, 1, 0), vl.k)
        for step in range(1, vl.k):
            # _multi_step_decode: "Rebuild every step when positions advance, or just once on the first
            # step when positions are constant (Gemma4 MTP)". The fused path (_fused_multi_step_decode,
            # a backend with supports_draft_decode_metadata_update) builds once with step=1.
            fused = vl.s.draft_decode_fused
            built = step if (sp.advance_draft_positions and not fused) else 1
            kw = self._metadata(sp._build_uniform_attn_metadata, n, ddesc, 1, ub, built)
            self._pass(rec, cmp, rec.drafts[step], ddesc, kw, built)

    def _metadata(self, build, n, desc, qsl_or_query_len, ub, step) -> dict:
        """The keyword arguments vLLM's ``_build_attn_metadata`` hands ``build_attn_metadata``."""
        V = self.vl.V
        ub_t = V.torch.from_numpy(ub)
        with capture_build_attn_metadata(V, V.spec_base) as calls:
            if build == self.sp._build_uniform_attn_metadata:
                build(
                    num_reqs=n,
                    batch_desc=desc,
                    num_query_per_req=qsl_or_query_len,
                    seq_lens_cpu_upper_bound=ub_t,
                    step=step,
                )
            else:
                build(
                    num_reqs=n,
                    batch_desc=desc,
                    query_start_loc_np=qsl_or_query_len,
                    seq_lens_cpu_upper_bound=ub_t,
                    step=step,
                )
        (kw,) = calls
        return kw

    def _pass(self, rec, cmp, d, desc, kw, vllm_step: int) -> None:
        V, vl, s = self.vl.V, self.vl, self.vl.s
        n, i = rec.batch.num_reqs, d.index
        cmp.check(rec.index, "R8", f"draft pass {i} cudagraph_mode", d.cudagraph_mode, desc.cg_mode.name)
        cmp.check(rec.index, "R8", f"draft pass {i} num_reqs_padded", d.num_reqs_padded, desc.num_reqs or n)
        step = draft_pass_step(s.speculative_method, i, s.draft_decode_fused, s.num_speculative_tokens)
        cmp.check(rec.index, "R5", f"draft pass {i} step", step, vllm_step)
        lab_ub = draft_step_upper_bound(rec.batch.seq_lens_cpu_upper_bound, n, step, s.max_model_len, d.num_reqs_padded)
        cmp.check(
            rec.index, "R5", f"draft pass {i} seq_lens_cpu_upper_bound", lab_ub, kw["seq_lens_cpu_upper_bound"].numpy()
        )
        cmp.check(rec.index, "R5", f"draft pass {i} max_seq_len", d.max_seq_len["fixed"], int(kw["max_seq_len"]))
        # Draft graphs are captured through prepare_inputs_to_capture too (SpeculatorCudaGraphManager.capture).
        kernel = vl._capture_max_seq_len(desc) if desc.cg_mode == V.CUDAGraphMode.FULL else int(kw["max_seq_len"])
        cmp.check(rec.index, "R5", f"draft pass {i} kernel_max_seq_len", d.kernel_max_seq_len["fixed"], kernel)


class capture_build_attn_metadata:
    """Replace build_attn_metadata in the modules that call it, recording the keyword arguments."""

    def __init__(self, V, *modules):
        self.modules = modules or (V.ms_default, V.ms_mamba)
        self.calls: list[dict] = []

    def __enter__(self):
        self._saved = [(m, m.build_attn_metadata) for m in self.modules]

        def build_attn_metadata(**kw):
            self.calls.append(kw)
            return {}

        for m in self.modules:
            m.build_attn_metadata = build_attn_metadata
        return self.calls

    def __exit__(self, *exc):
        for m, f in self._saved:
            m.build_attn_metadata = f
        return False
