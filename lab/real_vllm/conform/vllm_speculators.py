"""vLLM 0.33.0's own speculators, fed one recorded engine step at a time: ``VllmDrafts.compare`` runs
the real ``propose`` of the scenario's speculator up to its first GPU work (``draft_max_seq_len``, R4),
the graph managers its own ``init_cudagraph_manager`` makes (R8), and its ``_build_attn_metadata`` for
every draft pass (R5), and compares each with the lab's draft passes.

The class run is the speculator's record's (lab/speculators.py ``vllm_module``, ``vllm_class``). The
TargetDependentAR family (``EagleSpeculator``, ``MTPSpeculator``, ``Gemma4Speculator``) runs as built;
``StandaloneARSpeculator``, ``DFlashSpeculator`` and ``DSparkSpeculator`` run their own ``__init__`` over a
parent that sets only what they read; n-gram and extract-hidden-states run no draft attention, read off
vLLM's classes: ``NgramGPUSpeculator`` has no ``_build_attn_metadata``; ``ExtractHiddenStatesSpeculator``'s
draft layer gets a ``CacheOnlyAttentionMetadata``, which holds a slot mapping and nothing a walk reads.
"""

from __future__ import annotations

import importlib
import inspect
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np

from lab.engine.speculator import draft_step_upper_bound
from lab.speculators import draft_pass_step, speculator

_PKG = "vllm.v1.worker.gpu.spec_decode."
# How the harness drives each of vLLM's classes (by the class it runs, never by the lab's rules, which are
# what it checks): these run no draft attention; these draft in one query pass.
_NO_DRAFT_ATTENTION = ("NgramGPUSpeculator", "ExtractHiddenStatesSpeculator")
_ONE_QUERY_PASS = ("DFlashSpeculator", "DSparkSpeculator")


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
        # The speculator's vLLM class, as its record names it (lab/speculators.py); the harness drives each
        # class its own way.
        record = speculator(s.speculative_method)
        self.vllm_class = record.vllm_class
        self.module = importlib.import_module(_PKG + record.vllm_module)
        cls = getattr(self.module, record.vllm_class)
        if self.vllm_class in _NO_DRAFT_ATTENTION:
            self.num_passes = self._draft_attention_passes(V, cls)
            return
        if self.vllm_class in _ONE_QUERY_PASS:
            self.sp = self._dflash_family(V, s, cls)
            return
        if self.vllm_class == "StandaloneARSpeculator":
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

    def _draft_attention_passes(self, V, cls) -> int:
        """Draft attention passes a step of n-gram or extract-hidden-states runs, read off vLLM's classes:
        a speculator without ``_build_attn_metadata`` builds none; extract-hidden-states' cache-only layer
        (model_executor/models/extract_hidden_states.py) gets a metadata of its slot mapping alone, so
        nothing in it reads a block table or a max_seq_len."""
        if not hasattr(cls, "_build_attn_metadata"):
            return 0
        from vllm.model_executor.models import extract_hidden_states as ehs

        fields = set(vars(ehs.CacheOnlyAttentionMetadata(slot_mapping=V.torch.zeros(1))))
        return 0 if fields == {"slot_mapping"} else 1

    def _dflash_family(self, V, s, cls):
        """The real DFlashSpeculator (or DSparkSpeculator) ``__init__`` (where ``num_query_per_req`` is
        set: "bonus + N mask", DSpark's ``sample_from_anchor``), over a parent ``__init__`` that sets only
        what it reads, with a draft config of defaults; then its own ``init_cudagraph_manager``."""
        vl = self.vl
        torch = V.torch
        hf_config = SimpleNamespace(mask_token_id=0, num_hidden_layers=1, is_causal=True)
        draft_model_config = SimpleNamespace(use_mla=False, hf_config=hf_config, get_hidden_size=lambda: 8)
        spec_config = SimpleNamespace(draft_model_config=draft_model_config)
        vllm_config = SimpleNamespace(**vars(vl.vllm_config))
        vllm_config.speculative_config = spec_config
        vllm_config.compilation_config = SimpleNamespace(
            **vars(vl.vllm_config.compilation_config), cudagraph_mode=V.CUDAGraphMode[s.cudagraph_mode]
        )

        def parent_init(sp, vllm_config, device):
            sp.vllm_config, sp.device = vllm_config, device
            sp.speculative_config = spec_config
            sp.draft_model_config = spec_config.draft_model_config
            sp.num_speculative_steps = vl.k
            sp.max_num_reqs, sp.max_num_tokens = s.max_num_seqs, s.max_num_batched_tokens
            sp.hidden_size, sp.dtype = 8, torch.float32
            sp.draft_max_seq_len = s.max_model_len  # DraftModelSpeculator.__init__

        dfl = importlib.import_module(_PKG + "dflash.speculator")
        with (
            _replaced(V.spec_base.DraftModelSpeculator, "__init__", parent_init),
            # Context parallelism is off here; the parallel config is a namespace, not vLLM's dataclass.
            _replaced(dfl, "replace", lambda obj, **kw: obj),
        ):
            sp = cls(vllm_config, vl.device)
        sp.block_tables, sp.input_buffers = vl.block_tables, vl.input_buffers
        sp.arange_np = np.arange(vl.max_num_reqs + 1, dtype=np.int32)
        sp.dcp_size, sp.attn_groups, sp.kv_cache_config = 1, [], None
        sp.pcp_manager = None
        sp.draft_kv_cache_group_id, sp.draft_kv_cache_group_ids = 0, [0]
        # What set_attn and the parent __init__ leave for propose's arguments (read before its first GPU work).
        sp._context_slot_mappings, sp.temperature, sp.seeds = [None], None, None
        sp.draft_is_prefilling = torch.zeros(vl.max_num_reqs, dtype=torch.bool)
        # The draft backend supports FULL graphs of a uniform batch (what the lab assumes on a GPU).
        sp.attn_cg_support = SimpleNamespace(
            min_cg_support=importlib.import_module("vllm.v1.attention.backend").AttentionCGSupport.UNIFORM_BATCH,
            min_cg_attn_backend="any",
        )
        self.managers = []

        def manager(vllm_config, device, cudagraph_mode, decode_query_len):
            m = vl._manager(self.dcg.DFlashCudaGraphManager, cudagraph_mode, decode_query_len)
            self.managers.append(m)
            return m

        self.dcg = importlib.import_module(_PKG + "dflash.cudagraph")
        with _replaced(dfl, "DFlashCudaGraphManager", manager):
            sp.init_cudagraph_manager(V.CUDAGraphMode[s.cudagraph_mode])

        def stop(*a, **kw):
            raise Captured

        self._dflash_module = dfl
        self._stop = stop
        return sp

    def _compare_dflash(self, rec, cmp, batch, ub) -> None:
        """DFlashSpeculator.propose up to ``prepare_dflash_inputs`` (its first GPU work): draft_max_seq_len;
        then the dispatch and the one uniform metadata it builds (``step=num_query_per_req``)."""
        V, vl, sp = self.vl.V, self.vl, self.sp
        n = batch.num_reqs
        try:
            with _replaced(self._dflash_module, "prepare_dflash_inputs", self._stop):
                sp.propose(batch, {}, {}, None, None, None, None, None, None, None, None)
        except Captured:
            pass
        cmp.check(rec.index, "R4", "draft_max_seq_len", rec.draft_max_seq_len, int(sp.draft_max_seq_len))
        cmp.check(rec.index, "R4", "draft passes", len(rec.drafts), 1)
        q = sp.num_query_per_req
        (m,) = self.managers
        desc = m.dispatch(n, n * q, q, 0)
        kw = self._metadata(sp._build_uniform_attn_metadata, n, desc, q, ub, q)
        kernel = None
        if desc.cg_mode == V.CUDAGraphMode.FULL:
            # DFlashCudaGraphManager.capture builds its graphs' metadata with max_seq_len=max_model_len.
            with capture_build_attn_metadata(V, self.dcg) as calls:
                self.dcg._prepare_dflash_inputs_to_capture(
                    desc.num_reqs,
                    desc.num_tokens,
                    vl.capture_buffers,
                    vl.capture_bt,
                    [],
                    SimpleNamespace(kv_cache_groups=[]),
                    vl.s.max_model_len,
                    skip_attn=False,
                    causal=True,
                )
            (cap,) = calls
            kernel = int(cap["max_seq_len"])
        self._pass(rec, cmp, rec.drafts[0], desc, kw, q, kernel)

    def compare(self, rec, cmp, batch, state, desc, target_msl: int, ub: np.ndarray) -> None:
        V, vl = self.vl.V, self.vl
        if self.vllm_class in _NO_DRAFT_ATTENTION:
            cmp.check(rec.index, "R4", "draft passes", len(rec.drafts), self.num_passes)
            return
        if self.vllm_class in _ONE_QUERY_PASS:
            self._compare_dflash(rec, cmp, batch, ub)
            return
        sp = self.sp
        n = batch.num_reqs
        # StandaloneARSpeculator's propose leaves draft_max_seq_len as its __init__ set it (and needs the
        # draft model first); the others set it before their first GPU work.
        if self.vllm_class != "StandaloneARSpeculator":
            try:
                sp.propose(batch, {}, {}, None, None, None, None, None, None, None, None)
            except Captured:
                pass
        cmp.check(rec.index, "R4", "draft_max_seq_len", rec.draft_max_seq_len, int(sp.draft_max_seq_len))
        max_query_len = int(batch.num_scheduled_tokens.max())
        uniform0 = V.get_uniform_decode_token_count(n, batch.num_tokens, max_query_len, state.decode_graph_eligible)
        if self.vllm_class == "MultiModuleMTPSpeculator":
            # One metadata (step=0) for every module, on the target-shaped batch.
            (m,) = self.managers
            mdesc = m.dispatch(n, batch.num_tokens_after_padding, uniform0, 0)
            kw = self._metadata(sp._build_attn_metadata, n, mdesc, batch.query_start_loc_np, ub, 0)
            for d in rec.drafts:
                self._pass(rec, cmp, d, mdesc, kw, 0)
            return
        if self.vllm_class == "StandaloneARSpeculator":
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

    def _pass(self, rec, cmp, d, desc, kw, vllm_step: int, capture_max_seq_len: int | None = None) -> None:
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
        kernel = int(kw["max_seq_len"])
        if desc.cg_mode == V.CUDAGraphMode.FULL:
            kernel = vl._capture_max_seq_len(desc) if capture_max_seq_len is None else capture_max_seq_len
        cmp.check(rec.index, "R5", f"draft pass {i} kernel_max_seq_len", d.kernel_max_seq_len["fixed"], kernel)


class capture_build_attn_metadata:
    """Replace build_attn_metadata in the modules that call it, recording the keyword arguments."""

    def __init__(self, V, *modules):
        self.modules = modules or (V.ms_default, V.ms_mamba, V.ms_encdec)
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
