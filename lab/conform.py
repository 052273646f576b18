"""Conformance: the lab's engine, step by step, against vLLM 0.33.0's own Model Runner V2 code on the CPU.

The engine runs a scenario; every call it makes into its own model state, CUDA-graph manager, block
tables and speculator is recorded (``record_engine``). The same step is then fed into vLLM's real
classes and functions (``VllmMRV2``), built on the CPU without a GPU:

- R8: ``ModelRunner.gather_batch_req_state`` (batch order, uniform decode count) and
  ``CudaGraphManager._init_candidates`` / ``dispatch``; the speculator's ``SpeculatorCudaGraphManager``
  for the draft prefill and draft decodes (``dispatch`` + ``specialize_spec_tokens``).
- R1: ``seq_lens_cpu_upper_bound`` rebuilt as ``prepare_inputs`` does (inline there, so re-stated here).
- R2: ``DefaultModelState.prepare_attn`` / ``MambaHybridModelState.prepare_attn``; what they pass to
  ``build_attn_metadata`` is captured.
- R3/R9: ``prepare_inputs_to_capture`` for each FULL graph a step replays: the ``max_seq_len`` frozen in
  the graph (``for_capture=True``) against what the lab says the kernel sees.
- R4/R5: ``TargetDependentARSpeculator.propose`` (run up to its first GPU work, which sets
  ``draft_max_seq_len``) and ``DraftModelSpeculator._build_uniform_attn_metadata`` per draft step.
- R6/R7: ``BlockTables.append_block_ids`` / ``apply_staged_writes`` / ``gather_block_tables`` /
  ``compute_slot_mappings``: vLLM's own Triton kernels under ``TRITON_INTERPRET=1`` on CPU tensors,
  compared entry by entry (stale columns included).

Only this module imports vllm; it needs the conformance environment (``.venv-vllm``, see
docs/fidelity.md). The lab's ``fixed`` mode is compared; ``baseline`` is vLLM before PR #40654 and has
no 0.33.0 code to compare with.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from lab.engine.block_table import compute_slot_mappings
from lab.engine.cudagraph import kernel_visible_max_seq_len, target_capture_sizes
from lab.engine.model_states import make_model_state
from lab.engine.runner import ModelRunner, _loop
from lab.engine.scheduler import Scheduler
from lab.engine.speculator import draft_step_upper_bound

RULES = ("R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8")
RULE_TITLES = {
    "R1": "seq_lens_cpu_upper_bound (prepare_inputs)",
    "R2": "target max_seq_len, num_reqs, num_tokens (prepare_attn)",
    "R3": "FULL replay: max_seq_len frozen at capture (for_capture)",
    "R4": "draft_max_seq_len (propose)",
    "R5": "draft steps: upper bounds and metadata (_build_attn_metadata)",
    "R6": "gathered block table incl. stale columns (gather_block_tables)",
    "R7": "slot mapping (compute_slot_mappings)",
    "R8": "batch order and CUDA-graph dispatch (CudaGraphManager)",
}
VLLM_VERSION = "0.33.0"
HOW_TO_RUN = (".venv-vllm/bin/python -m lab conform --preset NAME   (make test builds .venv-vllm; "
              "see docs/fidelity.md)")


class VllmUnavailable(RuntimeError):
    pass


# ---- what the engine did ------------------------------------------------------------------------

@dataclass
class StepRecord:
    """One engine step, as the engine's own calls saw it."""

    index: int
    out: object  # SchedulerOutput
    prefill_len: np.ndarray  # per scheduled request (scheduler order)
    block_ops: list  # ("add", req_index) | ("append", req_indices, counts, block_ids)
    dispatch_args: tuple = ()
    batch: object = None  # lab InputBatch
    cg_mode: str = ""
    attn_metadata: dict = field(default_factory=dict)  # mode -> the lab's AttnMetadata
    inst: np.ndarray | None = None  # batch order
    table: np.ndarray | None = None
    drafts: list = field(default_factory=list)
    draft_max_seq_len: int | None = None


class _RecordingRunner(ModelRunner):
    """The engine's ModelRunner, unchanged, with its sub-objects' calls recorded."""

    def __init__(self, scenario, sched: Scheduler):
        super().__init__(scenario)
        self.sched = sched
        self.records: list[StepRecord] = []
        self._cur: StepRecord | None = None
        self._ops: list = []
        bt, ms, cg = self.block_tables, self.model_state, self.cudagraph_manager

        add, append, gather = bt.add_request, bt.append_block_ids, bt.gather_block_tables

        def add_request(req_index):
            self._ops.append(("add", int(req_index)))
            return add(req_index)

        def append_block_ids(req_indices, counts, block_ids):
            self._ops.append(("append", np.array(req_indices), np.array(counts), np.array(block_ids)))
            return append(req_indices, counts, block_ids)

        def gather_block_tables(idx_mapping, inst, num_reqs_padded):
            table = gather(idx_mapping, inst, num_reqs_padded)
            self._cur.inst = np.array(inst)
            self._cur.table = table.copy()
            return table

        bt.add_request, bt.append_block_ids, bt.gather_block_tables = add_request, append_block_ids, gather_block_tables

        dispatch = cg.dispatch

        def cg_dispatch(num_reqs, num_tokens, uniform):
            desc = dispatch(num_reqs, num_tokens, uniform)
            self._cur.dispatch_args = (num_reqs, num_tokens, uniform)
            return desc

        cg.dispatch = cg_dispatch
        prepare_attn = ms.prepare_attn

        def ms_prepare_attn(batch, cudagraph_mode, mode, for_capture=False):
            meta = prepare_attn(batch, cudagraph_mode, mode, for_capture)
            self._cur.batch, self._cur.cg_mode = batch, cudagraph_mode
            self._cur.attn_metadata[mode] = meta
            return meta

        ms.prepare_attn = ms_prepare_attn
        if self.speculator is not None:
            propose = self.speculator.propose

            def sp_propose(*args):
                passes = propose(*args)
                self._cur.drafts = passes
                self._cur.draft_max_seq_len = self.speculator.draft_max_seq_len["fixed"]
                return passes

            self.speculator.propose = sp_propose

    def execute_model(self, out, kv_owner):
        prefill_len = self.sched.prefill_len[out.req_indices].copy()
        self._cur = StepRecord(len(self.records), out, prefill_len, self._ops)
        result = super().execute_model(out, kv_owner)
        if len(out.req_indices):
            self.records.append(self._cur)
            self._ops = []  # an idle step's block-table calls (if any) carry over to the next step
        return result


def record_engine(scenario) -> list[StepRecord]:
    """Run the lab's engine on ``scenario`` and return every step's recorded calls."""
    sched = Scheduler(scenario)
    runner = _RecordingRunner(scenario, sched)
    _loop(scenario, sched, runner, None)
    return runner.records


# ---- vLLM on the CPU ------------------------------------------------------------------------------

_V = None


def load_vllm():
    """Import vLLM's MRV2 modules for CPU use (once). Raises VllmUnavailable with how to run."""
    global _V
    if _V is not None:
        return _V
    # The Triton interpreter runs vLLM's kernels on CPU tensors. vLLM disables Triton when no GPU
    # driver is active, except where CUDA_VISIBLE_DEVICES is set and empty (vllm/triton_utils/importing.py).
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    try:
        import torch

        import vllm
        from vllm.platforms import current_platform
        import vllm.utils.torch_utils as torch_utils
        import vllm.v1.worker.gpu.buffer_utils as buffer_utils
        from vllm.config.compilation import CUDAGraphMode
        from vllm.v1.worker.gpu import block_table, cudagraph_utils, input_batch, model_runner
        from vllm.v1.worker.gpu.model_states import default as ms_default
        from vllm.v1.worker.gpu.model_states import mamba_hybrid as ms_mamba
        from vllm.v1.worker.gpu.spec_decode import speculator as spec_base
        from vllm.v1.worker.gpu.spec_decode.target_dependent_ar import cudagraph_utils as spec_cg
        from vllm.v1.worker.gpu.spec_decode.eagle import speculator as spec_eagle
        from vllm.v1.worker.utils import get_uniform_decode_token_count
        from vllm.triton_utils import HAS_TRITON
    except ImportError as e:
        raise VllmUnavailable(f"vLLM {VLLM_VERSION} is not importable here ({e}). Run it from the conformance "
                              f"environment: {HOW_TO_RUN}") from e
    if vllm.__version__ != VLLM_VERSION:
        raise VllmUnavailable(f"found vLLM {vllm.__version__}, the conformance reference is {VLLM_VERSION}")
    if not HAS_TRITON:
        raise VllmUnavailable("vLLM disabled Triton; vLLM's block-table kernels cannot run")
    # No pinned memory and no UVA on a CPU-only machine: vLLM's own fallbacks, pointed at the CPU.
    buffer_utils.is_uva_available = lambda: False
    torch_utils.PIN_MEMORY = False
    current_platform.device_type = "cpu"
    _V = SimpleNamespace(torch=torch, CUDAGraphMode=CUDAGraphMode, block_table=block_table, cg=cudagraph_utils,
                         input_batch=input_batch, model_runner=model_runner, ms_default=ms_default,
                         ms_mamba=ms_mamba, spec_base=spec_base, spec_cg=spec_cg, spec_eagle=spec_eagle,
                         get_uniform_decode_token_count=get_uniform_decode_token_count)
    return _V


class _Captured(Exception):
    pass


class VllmMRV2:
    """vLLM's real MRV2 objects for one scenario, built on the CPU with only the attributes they read."""

    def __init__(self, scenario, capture_sizes: list[int]):
        V = self.V = load_vllm()
        torch = V.torch
        s = self.s = scenario
        self.k = s.num_speculative_tokens
        self.max_num_reqs = s.max_num_seqs
        self.device = torch.device("cpu")
        sizes = sorted(capture_sizes) if s.cudagraph_mode != "NONE" else []
        self.vllm_config = SimpleNamespace(
            scheduler_config=SimpleNamespace(max_num_seqs=s.max_num_seqs,
                                             max_num_batched_tokens=s.max_num_batched_tokens),
            compilation_config=SimpleNamespace(cudagraph_capture_sizes=sizes,
                                               max_cudagraph_capture_size=max(sizes, default=0)),
            parallel_config=SimpleNamespace(tensor_parallel_size=1, data_parallel_size=1),
            speculative_config=None, num_speculative_tokens=self.k,
            cache_config=SimpleNamespace(use_kda_recoverssm=False),
            model_config=SimpleNamespace(max_model_len=s.max_model_len))
        mode = V.CUDAGraphMode[s.cudagraph_mode]
        self.cg_manager = self._manager(V.cg.CudaGraphManager, mode, 1 + self.k)
        if self.k:
            self.prefill_cg_manager = self._manager(V.spec_cg.SpeculatorCudaGraphManager, mode, 1 + self.k)
            # target_dependent_ar/speculator.py init_cudagraph_manager
            dmode = V.CUDAGraphMode.FULL_DECODE_ONLY if mode.decode_mode() == V.CUDAGraphMode.FULL \
                else V.CUDAGraphMode.NONE
            self.decode_cg_manager = self._manager(V.spec_cg.SpeculatorCudaGraphManager, dmode, 1)

        # Model state: only what prepare_attn reads.
        cls = V.ms_mamba.MambaHybridModelState if s.model_state == "mamba_hybrid" else V.ms_default.DefaultModelState
        ms = self.model_state = object.__new__(cls)
        ms.model_config = self.vllm_config.model_config  # max_model_len is read from it
        ms.supports_mm_inputs = False
        ms.encoder_cache = None
        ms.vllm_config = self.vllm_config
        ms.num_accepted_tokens_gpu = torch.ones(self.max_num_reqs, dtype=torch.int32)
        ms._align_mode = False
        ms.recoverssm = None

        self.block_tables = V.block_table.BlockTables(
            [s.block_size], self.max_num_reqs, s.max_num_batched_tokens, [s.max_num_blocks_per_req], self.device)
        self.input_buffers = V.input_batch.InputBuffers(self.max_num_reqs, s.max_num_batched_tokens, self.device)
        self.capture_bt = V.block_table.BlockTables(
            [s.block_size], self.max_num_reqs, max(s.max_num_batched_tokens, max(sizes, default=0)),
            [s.max_num_blocks_per_req], self.device)
        self.capture_buffers = V.input_batch.InputBuffers(
            self.max_num_reqs, max(s.max_num_batched_tokens, max(sizes, default=0)), self.device)
        self._capture_msl: dict = {}
        # The lab's own model state, asked for its capture metadata (R3).
        self._lab_model_state = make_model_state(s.model_state, s.max_model_len, s.max_num_seqs)

        # The runner: only what gather_batch_req_state reads.
        r = self.runner = object.__new__(V.model_runner.GPUModelRunner)
        r.decode_query_len = 1 + self.k
        r.use_pp = False
        r.adaptive_verification = None
        r.pcp_manager = None

        if self.k:
            sp = self.speculator = object.__new__(V.spec_eagle.EagleSpeculator)
            sp.vllm_config = self.vllm_config
            sp.num_speculative_steps = self.k
            sp.draft_max_seq_len = s.max_model_len  # DraftModelSpeculator.__init__
            sp.block_tables = self.block_tables
            sp.input_buffers = self.input_buffers
            sp.arange_np = np.arange(self.max_num_reqs + 1, dtype=np.int32)
            sp.dcp_size = 1
            sp.attn_groups = []
            sp.kv_cache_config = None
            sp.draft_is_prefilling = torch.zeros(self.max_num_reqs, dtype=torch.bool)

            def stop(*a, **kw):
                raise _Captured

            sp._copy_request_inputs = stop  # the first GPU work in propose

    def _manager(self, cls, mode, decode_query_len):
        m = object.__new__(cls)
        m.vllm_config = self.vllm_config
        m.device = self.device
        m.max_num_reqs = self.max_num_reqs
        m.compilation_config = self.vllm_config.compilation_config
        m.cudagraph_mode = mode
        m.decode_query_len = decode_query_len
        m.varlen_decode = False
        m.ubatch_runner = None
        m.lora_capture_cases = [0]
        m._lora_dispatch_map, m._max_lora_case = m._build_lora_dispatch_map()
        m.graphs = {}
        m._graphs_captured = False
        m._candidates, m._capture_descs = {}, {}
        m._init_candidates()
        # What capture() leaves behind: one graph per capture descriptor.
        m.graphs = {d: None for descs in m._capture_descs.values() for d in descs}
        m._graphs_captured = True
        return m

    def _capture_max_seq_len(self, desc) -> int:
        """max_seq_len that prepare_inputs_to_capture builds the FULL graph ``desc`` with (R3)."""
        key = (desc.num_reqs, desc.num_tokens, desc.uniform_token_count)
        if key not in self._capture_msl:
            V = self.V
            num_reqs = desc.num_reqs or min(desc.num_tokens, self.max_num_reqs)
            with _capture_build_attn_metadata(V) as calls:
                V.cg.prepare_inputs_to_capture(
                    num_reqs, desc.num_tokens, self.model_state, self.capture_buffers, self.capture_bt, [],
                    SimpleNamespace(kv_cache_groups=[]), full_cudagraph=True,
                    max_query_len=desc.max_query_len or desc.uniform_token_count)
            (kw,) = calls
            assert kw["for_cudagraph_capture"] is True
            self._capture_msl[key] = int(kw["max_seq_len"])
        return self._capture_msl[key]

    # ---- one step ------------------------------------------------------------------------------
    def step(self, rec: StepRecord, cmp: "Comparison", kernels: bool = True) -> None:
        V, torch, s = self.V, self.V.torch, self.s
        out = rec.out
        n = len(out.req_indices)
        ids = [str(int(i)) for i in out.inst]
        # R8: batch order and uniform count, from the real gather_batch_req_state.
        sched_out = SimpleNamespace(
            num_scheduled_tokens={r: int(t) for r, t in zip(ids, out.num_scheduled_tokens)},
            total_num_scheduled_tokens=int(out.num_scheduled_tokens.sum()),
            scheduled_spec_decode_tokens={r: [0] * int(d) for r, d in zip(ids, out.num_draft_tokens) if d})
        slot = {r: i for i, r in enumerate(ids)}
        comp_prefill = np.minimum(out.num_computed_tokens, rec.prefill_len)
        self.runner.req_states = SimpleNamespace(
            req_id_to_index=slot, prefill_len=SimpleNamespace(np=rec.prefill_len),
            num_computed_prefill_tokens=comp_prefill, max_seq_len=None)
        state, uniform = self.runner.gather_batch_req_state(sched_out, False)
        order = np.array([slot[r] for r in state.req_ids])
        lab_order = [str(int(i)) for i in rec.inst]
        cmp.check(rec.index, "R8", "batch_order", lab_order, list(state.req_ids))
        max_query_len = None if state.has_prefill else int(out.num_scheduled_tokens.max())
        desc = self.cg_manager.dispatch(n, state.num_tokens, uniform, 0, max_query_len)
        cmp.check(rec.index, "R8", "uniform_token_count", rec.dispatch_args[2], uniform)
        cmp.check(rec.index, "R8", "cudagraph_mode", rec.cg_mode, desc.cg_mode.name)
        cmp.check(rec.index, "R8", "num_tokens_after_padding", rec.batch.num_tokens_after_padding, desc.num_tokens)
        num_reqs_padded = desc.num_reqs or n
        cmp.check(rec.index, "R8", "num_reqs_after_padding", rec.batch.num_reqs_after_padding, num_reqs_padded)

        # The batch in vLLM's order (the lab's arrays, permuted by vLLM's order).
        num_sched = out.num_scheduled_tokens[order].astype(np.int32)
        comp_cpu = out.num_computed_tokens[order]
        idx_mapping_np = rec.batch.idx_mapping_np if lab_order == list(state.req_ids) else None
        if idx_mapping_np is None:
            return  # later fields would only repeat the order disagreement
        num_tokens = int(num_sched.sum())
        # R1: vllm model_runner.py prepare_inputs, inline there.
        ub = np.zeros(num_reqs_padded, dtype=np.int32)
        np.add(comp_cpu, num_sched, out=ub[:n])
        cmp.check(rec.index, "R1", "seq_lens_cpu_upper_bound", rec.batch.seq_lens_cpu_upper_bound, ub)
        qsl_np = np.empty(self.max_num_reqs + 1, dtype=np.int32)
        qsl_np[0] = 0
        np.cumsum(num_sched, out=qsl_np[1:n + 1])
        qsl_np[n + 1:] = num_tokens
        qsl_np = qsl_np[:num_reqs_padded + 1]
        seq_lens = np.zeros(num_reqs_padded, dtype=np.int32)
        seq_lens[:n] = rec.batch.seq_lens[:n]  # exact lengths: GPU-side state the lab models
        positions = np.zeros(max(desc.num_tokens, num_tokens), dtype=np.int64)
        starts = seq_lens[:n] - num_sched
        positions[:num_tokens] = np.repeat(starts, num_sched) + (np.arange(num_tokens) - np.repeat(qsl_np[:n], num_sched))
        idx_mapping = torch.from_numpy(idx_mapping_np.astype(np.int64))
        qsl = torch.from_numpy(qsl_np.copy())

        # R6/R7: vLLM's BlockTables and its Triton kernels (interpreted: slow, so they can be skipped).
        table = torch.from_numpy(rec.table)
        if kernels:
            table = self._block_tables(rec, cmp, idx_mapping, num_reqs_padded, qsl, qsl_np, positions, desc, n)

        # R2: the real prepare_attn, normal call.
        batch = SimpleNamespace(
            req_ids=list(state.req_ids), num_reqs=n, num_reqs_after_padding=num_reqs_padded, num_tokens=num_tokens,
            num_tokens_after_padding=desc.num_tokens, idx_mapping=idx_mapping, idx_mapping_np=idx_mapping_np,
            query_start_loc_np=qsl_np, query_start_loc=qsl, max_query_len=None, num_scheduled_tokens=num_sched,
            seq_lens=torch.from_numpy(seq_lens), seq_lens_cpu_upper_bound=torch.from_numpy(ub), pcp=None,
            dcp_local_seq_lens=None, positions=torch.from_numpy(positions), is_prefilling_np=state.is_prefilling_np,
            prefill_runs_as_decode_np=state.prefill_runs_as_decode_np,
            num_draft_tokens_per_req=state.num_draft_tokens_np, prompt_lens=None, fast_prefill=None,
            decode_graph_eligible=state.decode_graph_eligible)
        with _capture_build_attn_metadata(V) as calls:
            self.model_state.prepare_attn(batch, desc.cg_mode, (table,), None, [], None)
        (kw,) = calls
        meta = rec.attn_metadata["fixed"]
        cmp.check(rec.index, "R2", "max_seq_len", meta.max_seq_len, int(kw["max_seq_len"]))
        cmp.check(rec.index, "R2", "num_reqs", meta.num_reqs, int(kw["num_reqs"]))
        cmp.check(rec.index, "R2", "num_tokens", meta.num_tokens, int(kw["num_tokens"]))
        cmp.check(rec.index, "R2", "max_query_len", meta.max_query_len, int(kw["max_query_len"]))
        cmp.check(rec.index, "R2", "for_capture", meta.for_capture, bool(kw["for_cudagraph_capture"]))
        target_msl = int(kw["max_seq_len"])
        # R3/R9: a FULL replay runs with the metadata frozen at capture.
        target_kernel = target_msl
        if desc.cg_mode == V.CUDAGraphMode.FULL:
            target_kernel = self._capture_max_seq_len(desc)
            lab_capture = self._lab_model_state.prepare_attn(rec.batch, "NONE", "fixed", for_capture=True)
            cmp.check(rec.index, "R3", "capture max_seq_len (prepare_attn for_capture)", lab_capture.max_seq_len,
                      target_kernel)
        cmp.check(rec.index, "R3", "kernel_max_seq_len", kernel_visible_max_seq_len(rec.cg_mode, meta.max_seq_len, s.max_model_len),
                  target_kernel)

        if self.k:
            self._draft(rec, cmp, batch, state, uniform, desc, target_msl, target_kernel, ub)

    def _block_tables(self, rec, cmp, idx_mapping, num_reqs_padded, qsl, qsl_np, positions, desc, n):
        torch, s = self.V.torch, self.s
        bt = self.block_tables
        for op in rec.block_ops:
            if op[0] == "add":
                bt.append_block_ids(op[1], ([],), overwrite=True)
            else:
                _, req_indices, counts, block_ids = op
                off = 0
                for r, c in zip(req_indices.tolist(), counts.tolist()):
                    bt.append_block_ids(r, (block_ids[off:off + c].tolist(),), overwrite=False)
                    off += c
        bt.apply_staged_writes()
        (table,) = bt.gather_block_tables(idx_mapping, num_reqs_padded)
        cmp.check_table(rec.index, "R6", "block_table", rec.table, table.numpy())
        slots = bt.compute_slot_mappings(idx_mapping, qsl, torch.from_numpy(positions), desc.num_tokens)[0].numpy()
        lab_slots = compute_slot_mappings(rec.table, qsl_np[:n + 1], positions, s.block_size, desc.num_tokens)
        cmp.check_table(rec.index, "R7", "slot_mapping", lab_slots[None, :], slots[None, :])

        return table

    def _draft(self, rec, cmp, batch, state, uniform, desc, target_msl, target_kernel, ub) -> None:
        V, torch, s = self.V, self.V.torch, self.s
        sp = self.speculator
        n = batch.num_reqs
        try:
            sp.propose(batch, {}, {}, None, None, None, None, None, None, None, None)
        except _Captured:
            pass
        cmp.check(rec.index, "R4", "draft_max_seq_len", rec.draft_max_seq_len, int(sp.draft_max_seq_len))
        # Draft prefill (pass 0): its own manager, dispatched as propose does.
        max_query_len = int(batch.num_scheduled_tokens.max())
        uniform0 = V.get_uniform_decode_token_count(n, batch.num_tokens, max_query_len, state.decode_graph_eligible)
        pdesc = self.prefill_cg_manager.dispatch(n, batch.num_tokens_after_padding, uniform0, 0)
        d0 = rec.drafts[0]
        cmp.check(rec.index, "R8", "draft prefill cudagraph_mode", d0.cudagraph_mode, pdesc.cg_mode.name)
        cmp.check(rec.index, "R8", "draft prefill num_reqs_padded", d0.num_reqs_padded, pdesc.num_reqs or n)
        # Not FULL: the target's metadata is reused; FULL: the draft graph's capture metadata.
        d0_kernel = self._capture_max_seq_len(pdesc) if pdesc.cg_mode == V.CUDAGraphMode.FULL else target_msl
        cmp.check(rec.index, "R5", "draft prefill max_seq_len", d0.max_seq_len["fixed"], target_msl)
        cmp.check(rec.index, "R5", "draft prefill kernel_max_seq_len", d0.kernel_max_seq_len["fixed"], d0_kernel)
        if self.k <= 1:
            return
        ddesc = self.decode_cg_manager.dispatch(n, n, 1, 0)
        ddesc = self.decode_cg_manager.specialize_spec_tokens(ddesc, self.k)
        ub_t = torch.from_numpy(ub)
        for step in range(1, self.k):
            d = rec.drafts[step]
            cmp.check(rec.index, "R8", f"draft step {step} cudagraph_mode", d.cudagraph_mode, ddesc.cg_mode.name)
            cmp.check(rec.index, "R8", f"draft step {step} num_reqs_padded", d.num_reqs_padded, ddesc.num_reqs or n)
            with _capture_build_attn_metadata(V, V.spec_base) as calls:
                sp._build_uniform_attn_metadata(num_reqs=n, batch_desc=ddesc, num_query_per_req=1,
                                                seq_lens_cpu_upper_bound=ub_t, step=step)
            (kw,) = calls
            lab_ub = draft_step_upper_bound(rec.batch.seq_lens_cpu_upper_bound, n, step, s.max_model_len,
                                            d.num_reqs_padded)
            cmp.check(rec.index, "R5", f"draft step {step} seq_lens_cpu_upper_bound", lab_ub,
                      kw["seq_lens_cpu_upper_bound"].numpy())
            cmp.check(rec.index, "R5", f"draft step {step} max_seq_len", d.max_seq_len["fixed"], int(kw["max_seq_len"]))
            # Draft-decode graphs are captured through prepare_inputs_to_capture too
            # (SpeculatorCudaGraphManager.capture, with the model state's prepare_attn).
            kernel = (self._capture_max_seq_len(ddesc) if ddesc.cg_mode == V.CUDAGraphMode.FULL
                      else int(kw["max_seq_len"]))
            cmp.check(rec.index, "R5", f"draft step {step} kernel_max_seq_len", d.kernel_max_seq_len["fixed"], kernel)


class _capture_build_attn_metadata:
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


# ---- the comparison -------------------------------------------------------------------------------

@dataclass
class Disagreement:
    step: int
    rule: str
    field: str
    lab: object
    vllm: object

    def __str__(self) -> str:
        return f"step {self.step} {self.rule} {self.field}: lab {self.lab!r}, vLLM {self.vllm!r}"


class Comparison:
    """Agreement counts per rule: steps compared and entries compared, and every disagreement."""

    def __init__(self):
        self.checks = Counter()  # rule -> comparisons (a table counts one per entry)
        self.steps: dict[str, set] = {r: set() for r in RULES}
        self.disagreements: list[Disagreement] = []

    def _record(self, step, rule, fld, lab, vllm, ok, entries=1):
        self.checks[rule] += entries
        self.steps[rule].add(step)
        if not ok:
            self.disagreements.append(Disagreement(step, rule, fld, lab, vllm))

    def check(self, step, rule, fld, lab, vllm) -> None:
        if isinstance(lab, np.ndarray) or isinstance(vllm, np.ndarray):
            a, b = np.asarray(lab).tolist(), np.asarray(vllm).tolist()
            self._record(step, rule, fld, a, b, a == b, max(len(a), 1))
        else:
            self._record(step, rule, fld, lab, vllm, lab == vllm)

    def check_table(self, step, rule, fld, lab: np.ndarray, vllm: np.ndarray) -> None:
        ok = lab.shape == vllm.shape and bool((lab == vllm).all())
        if ok:
            self._record(step, rule, fld, None, None, True, lab.size)
            return
        if lab.shape != vllm.shape:
            self._record(step, rule, f"{fld} shape", lab.shape, vllm.shape, False, lab.size)
            return
        rows, cols = np.nonzero(lab != vllm)
        i, j = int(rows[0]), int(cols[0])
        self._record(step, rule, f"{fld}[{i}, {j}] ({len(rows)} entries differ)", int(lab[i, j]),
                     int(vllm[i, j]), False, lab.size)

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def merge(self, other: "Comparison", label: str) -> None:
        """Add another scenario's comparison (its steps counted apart, under ``label``)."""
        self.checks.update(other.checks)
        for r in RULES:
            self.steps[r] |= {(label, x) for x in other.steps[r]}
        self.disagreements += other.disagreements

    def table(self) -> str:
        lines = [f"{'rule':<4} {'what is compared':<62} {'steps':>7} {'entries':>10} {'disagree':>8}"]
        bad = Counter(d.rule for d in self.disagreements)
        for r in RULES:
            lines.append(f"{r:<4} {RULE_TITLES[r]:<62} {len(self.steps[r]):>7,} {self.checks[r]:>10,} {bad[r]:>8}")
        return "\n".join(lines)


def conform(scenario, kernels: bool = True, max_disagreements: int = 20) -> Comparison:
    """Run ``scenario`` through the lab's engine and vLLM's MRV2 code; return the comparison.

    ``kernels=False`` skips R6/R7 (vLLM's Triton kernels, interpreted on the CPU: most of the time)."""
    records = record_engine(scenario)
    vl = VllmMRV2(scenario, target_capture_sizes(scenario))
    cmp = Comparison()
    for rec in records:
        vl.step(rec, cmp, kernels)
        if len(cmp.disagreements) >= max_disagreements:
            break
    return cmp


def random_scenario(seed: int):
    """A small random scenario (seeded), in the spirit of tests/test_properties.py: 1-10 requests, every
    model state and CUDA-graph mode, K 0..4, sometimes explicit capture sizes, sometimes a KV cache
    barely big enough to force preemption."""
    from lab.scenario import Scenario

    rng = np.random.default_rng(seed)
    mml = int(rng.choice([256, 512, 1024, 2048]))
    k = int(rng.integers(0, 5))
    requests = [(int(rng.integers(0, 15)), int(rng.integers(1, min(400, mml - 1) + 1)), int(rng.integers(1, 41)))
                for _ in range(int(rng.integers(1, 11)))]
    capture = None
    if rng.random() < 0.5:
        capture = tuple(sorted(set(int(x) for x in rng.integers(1, 33, size=int(rng.integers(1, 6))))))
    s = Scenario(
        requests=requests, max_model_len=mml, block_size=int(rng.choice([1, 2, 4, 8, 16, 32])),
        model_state=str(rng.choice(["default", "mamba_hybrid"])), num_speculative_tokens=k,
        cudagraph_mode=str(rng.choice(["FULL_AND_PIECEWISE", "FULL_AND_PIECEWISE", "PIECEWISE", "NONE"])),
        cudagraph_capture_sizes=capture, max_num_seqs=int(rng.integers(1, 9)),
        max_num_batched_tokens=int(rng.integers(max(8, 1 + k), 1025)),
        acceptance_rate=float(rng.choice([0.0, 1.0, rng.random()])), seed=int(rng.integers(0, 2**32)),
        max_num_steps=5_000, name=f"random-{seed}")
    if rng.random() < 0.5:
        smallest = max(s.blocks_per_request(r) for r in s.requests) + 1
        s = s.replace(num_gpu_blocks=int(rng.integers(smallest, 2 * smallest + 1)))
    return s


# ---- the suite's scenario set and the CLI -------------------------------------------------------

# The conformance suite (tests/conformance) and `python -m lab conform --all` run the same set.
NUM_RANDOM = 220
KERNEL_EVERY = 4  # R6/R7 (interpreted Triton kernels) on every 4th random scenario and every preset


def suite_cases():
    """(label, scenario, kernels) for every preset and NUM_RANDOM seeded random scenarios."""
    from lab.presets import get_preset, list_presets

    cases = [(f"preset {name}", get_preset(name), True) for name in list_presets()]
    cases += [(f"random {seed}", random_scenario(seed), seed % KERNEL_EVERY == 0) for seed in range(NUM_RANDOM)]
    return cases


def format_failure(label: str, cmp: Comparison, limit: int = 10) -> str:
    lines = [f"{label}: {len(cmp.disagreements)} disagreement(s) between the lab and vLLM {VLLM_VERSION}:"]
    lines += [f"  {d}" for d in cmp.disagreements[:limit]]
    return "\n".join(lines + ["", cmp.table()])


def cli(args, out=None) -> int:
    """``python -m lab conform``: run the comparison and print the agreement table per rule."""
    from lab.presets import get_preset
    from lab.scenario import parse_spec

    w = (out or sys.stdout).write
    chosen = [x for x in (args.preset, args.spec, args.random, args.all or None) if x]
    if len(chosen) != 1:
        raise ValueError("give exactly one of --preset NAME, --spec TEXT, --random A:B, --all")
    if args.preset:
        cases = [(f"preset {args.preset}", get_preset(args.preset), True)]
    elif args.spec:
        cases = [("spec", parse_spec(args.spec), True)]
    elif args.random:
        try:
            a, b = (int(x) for x in args.random.split(":"))
        except ValueError:
            raise ValueError(f"--random wants seeds as A:B (e.g. 0:50), got {args.random!r}") from None
        if not 0 <= a < b:
            raise ValueError(f"--random wants 0 <= A < B, got {args.random!r}")
        cases = [(f"random {s}", random_scenario(s), s % KERNEL_EVERY == 0) for s in range(a, b)]
    else:
        cases = suite_cases()
    if args.no_kernels:
        cases = [(label, s, False) for label, s, _ in cases]
    try:
        load_vllm()
    except VllmUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    total = Comparison()
    t0 = time.perf_counter()
    for label, scenario, kernels in cases:
        t = time.perf_counter()
        cmp = conform(scenario, kernels=kernels)
        if len(cases) == 1 or cmp.disagreements:
            w(f"{label}: {scenario.to_spec()}  ({time.perf_counter() - t:.1f} s, "
              f"R6/R7 {'on' if kernels else 'off'})\n")
        if cmp.disagreements:
            w(format_failure(label, cmp) + "\n\n")
        total.merge(cmp, label)
    w(f"vLLM {VLLM_VERSION} MRV2 code on the CPU vs the lab's engine ('fixed' mode), {len(cases)} scenario(s), "
      f"{time.perf_counter() - t0:.0f} s (steps: scenario steps compared; entries: values compared)\n")
    w(total.table() + "\n")
    w("agree\n" if total.ok else f"DISAGREE: {len(total.disagreements)} disagreement(s)\n")
    return 0 if total.ok else 1
