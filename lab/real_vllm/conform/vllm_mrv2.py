"""vLLM 0.33.0's real MRV2 objects, built on the CPU with only the attributes their methods read,
and fed one recorded engine step at a time (``VllmMRV2.step``); the speculators, capture sizes and
request slots in lab/real_vllm/conform/vllm_speculators.py, vllm_config.py and vllm_slots.py; a sliding-window
group's reach in vllm_sliding_window.py."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np

from lab.engine.block_table import compute_slot_mappings
from lab.engine.cudagraph import kernel_visible_max_seq_len
from lab.engine.model_states import make_model_state
from lab.real_vllm.conform.agreement import Comparison
from lab.real_vllm.conform.recording import RecordedStep
from lab.real_vllm.conform.vllm_sliding_window import num_computed_tokens_by_slot, vllm_sliding_window_reach
from lab.real_vllm.conform.vllm_slots import VllmRequestSlots
from lab.real_vllm.conform.vllm_speculators import VllmDrafts, capture_build_attn_metadata
from lab.vllm_env import VLLM_VERSION  # the one reference release (lab/history.py), as the loader names it

HOW_TO_RUN = ".venv-vllm/bin/python -m lab conform --preset NAME   (make test builds .venv-vllm; see docs/fidelity.md)"


class VllmUnavailable(RuntimeError):
    pass


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
        import vllm.utils.torch_utils as torch_utils
        import vllm.v1.worker.gpu.buffer_utils as buffer_utils
        from vllm.config.compilation import CUDAGraphMode
        from vllm.platforms import current_platform
        from vllm.triton_utils import HAS_TRITON
        from vllm.v1.worker.gpu import block_table, cudagraph_utils, input_batch, model_runner
        from vllm.v1.worker.gpu.model_states import default as ms_default
        from vllm.v1.worker.gpu.model_states import encoder_decoder as ms_encdec
        from vllm.v1.worker.gpu.model_states import encoder_only as ms_enconly
        from vllm.v1.worker.gpu.model_states import mamba_hybrid as ms_mamba
        from vllm.v1.worker.gpu.spec_decode import speculator as spec_base
        from vllm.v1.worker.gpu.spec_decode.eagle import speculator as spec_eagle
        from vllm.v1.worker.gpu.spec_decode.target_dependent_ar import cudagraph_utils as spec_cg
        from vllm.v1.worker.utils import get_uniform_decode_token_count
    except ImportError as e:
        raise VllmUnavailable(
            f"vLLM {VLLM_VERSION} is not importable here ({e}). Run it from the conformance environment: {HOW_TO_RUN}"
        ) from e
    if vllm.__version__ != VLLM_VERSION:
        raise VllmUnavailable(f"found vLLM {vllm.__version__}, the conformance reference is {VLLM_VERSION}")
    if not HAS_TRITON:
        raise VllmUnavailable("vLLM disabled Triton; vLLM's block-table kernels cannot run")
    # No pinned memory and no UVA on a CPU-only machine: vLLM's own fallbacks, pointed at the CPU.
    buffer_utils.is_uva_available = lambda: False
    torch_utils.PIN_MEMORY = False
    ms_encdec.PIN_MEMORY = False  # imported by name there
    current_platform.device_type = "cpu"
    _V = SimpleNamespace(
        torch=torch,
        CUDAGraphMode=CUDAGraphMode,
        block_table=block_table,
        cg=cudagraph_utils,
        input_batch=input_batch,
        model_runner=model_runner,
        ms_default=ms_default,
        ms_mamba=ms_mamba,
        ms_encdec=ms_encdec,
        ms_enconly=ms_enconly,
        spec_base=spec_base,
        spec_cg=spec_cg,
        spec_eagle=spec_eagle,
        get_uniform_decode_token_count=get_uniform_decode_token_count,
    )
    return _V


class VllmMRV2:
    """vLLM's real MRV2 objects for one scenario, built on the CPU with only the attributes they read."""

    def __init__(self, scenario, capture_sizes: list[int], max_capture_size: int):
        V = self.V = load_vllm()
        torch = V.torch
        s = self.s = scenario
        self.k = s.num_speculative_tokens
        self.max_num_reqs = s.max_num_seqs
        self.device = torch.device("cpu")
        sizes = sorted(capture_sizes)
        self.vllm_config = SimpleNamespace(
            scheduler_config=SimpleNamespace(
                max_num_seqs=s.max_num_seqs, max_num_batched_tokens=s.max_num_batched_tokens
            ),
            compilation_config=SimpleNamespace(
                cudagraph_capture_sizes=sizes, max_cudagraph_capture_size=max_capture_size
            ),
            parallel_config=SimpleNamespace(tensor_parallel_size=1, data_parallel_size=1),
            speculative_config=None,
            num_speculative_tokens=self.k,
            cache_config=SimpleNamespace(use_kda_recoverssm=False),
            model_config=SimpleNamespace(max_model_len=s.max_model_len),
        )
        mode = V.CUDAGraphMode[s.cudagraph_mode]
        self.cg_manager = self._manager(V.cg.CudaGraphManager, mode, 1 + self.k)
        # Model state: only what prepare_attn reads.
        cls = {
            "mamba_hybrid": V.ms_mamba.MambaHybridModelState,
            "encoder_decoder": V.ms_encdec.EncoderDecoderModelState,
            "encoder_only": V.ms_enconly.EncoderOnlyModelState,
        }.get(s.model_state, V.ms_default.DefaultModelState)
        ms = self.model_state = object.__new__(cls)
        # EncoderDecoderModelState._get_encoder_seq_lens: no request has encoder features here and no group
        # is cross-attention, so the encoder lengths reach no builder; max_seq_len is what is compared.
        ms.encoder_seq_lens_gpu = torch.zeros(self.max_num_reqs, dtype=torch.int32)
        ms.max_encoder_len = 0
        # EncoderOnlyModelState._build_encoder_attn_metadata: one encoder group whose builder records the
        # CommonAttentionMetadata it is handed (max_seq_len, and the dummy block table it gets).
        self.encoder_metadata: list = []
        builder = SimpleNamespace(
            build=lambda common_prefix_len, common_attn_metadata: self.encoder_metadata.append(common_attn_metadata)
        )
        ms.encoder_attn_groups = [SimpleNamespace(get_metadata_builder=lambda i: builder, layer_names=["encoder"])]
        ms._dummy_block_table = torch.zeros(self.max_num_reqs, 1, dtype=torch.int32)
        ms._dummy_slot_mapping = torch.zeros(max(s.max_num_batched_tokens, 1), dtype=torch.int64)
        ms.model_config = self.vllm_config.model_config  # max_model_len is read from it
        ms.supports_mm_inputs = False
        ms.encoder_cache = SimpleNamespace(mm_features={}) if s.model_state == "encoder_decoder" else None
        ms.vllm_config = self.vllm_config
        ms.num_accepted_tokens_gpu = torch.ones(self.max_num_reqs, dtype=torch.int32)
        ms._align_mode = False
        ms.recoverssm = None

        # R11: with a window, a second KV-cache group, sliding, with the same ids (vllm_sliding_window.py).
        self.sliding_window_reach = vllm_sliding_window_reach(s) if s.sliding_window else 0
        groups = 2 if s.sliding_window else 1
        self.block_tables = V.block_table.BlockTables(
            [s.block_size] * groups,
            self.max_num_reqs,
            s.max_num_batched_tokens,
            [s.max_num_blocks_per_req] * groups,
            self.device,
            sliding_window_reach=[0, self.sliding_window_reach][:groups],
        )
        self.input_buffers = V.input_batch.InputBuffers(self.max_num_reqs, s.max_num_batched_tokens, self.device)
        self.capture_bt = V.block_table.BlockTables(
            [s.block_size],
            self.max_num_reqs,
            max(s.max_num_batched_tokens, max(sizes, default=0)),
            [s.max_num_blocks_per_req],
            self.device,
        )
        self.capture_buffers = V.input_batch.InputBuffers(
            self.max_num_reqs, max(s.max_num_batched_tokens, max(sizes, default=0)), self.device
        )
        self._capture_msl: dict = {}
        # The lab's own model state, asked for its capture metadata (R3).
        self._lab_model_state = make_model_state(s.model_state, s.max_model_len, s.max_num_seqs)
        self.slots = VllmRequestSlots(V, self.max_num_reqs, self.k)  # request slots: vLLM's, not the lab's

        # The runner: only what gather_batch_req_state reads.
        r = self.runner = object.__new__(V.model_runner.GPUModelRunner)
        r.decode_query_len = 1 + self.k
        r.use_pp = False
        r.adaptive_verification = None
        r.pcp_manager = None

        # The speculator, its graph managers and its metadata: vLLM's own (lab/real_vllm/conform/vllm_speculators.py).
        self.drafts = VllmDrafts(self) if self.k else None

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
            with capture_build_attn_metadata(V) as calls:
                V.cg.prepare_inputs_to_capture(
                    num_reqs,
                    desc.num_tokens,
                    self.model_state,
                    self.capture_buffers,
                    self.capture_bt,
                    [],
                    SimpleNamespace(kv_cache_groups=[]),
                    full_cudagraph=True,
                    max_query_len=desc.max_query_len or desc.uniform_token_count,
                )
            (kw,) = calls
            assert kw["for_cudagraph_capture"] is True
            self._capture_msl[key] = int(kw["max_seq_len"])
        return self._capture_msl[key]

    # ---- one step ------------------------------------------------------------------------------
    def step(self, rec: RecordedStep, cmp: Comparison, kernels: bool = True) -> None:
        torch = self.V.torch
        n = len(rec.out.req_nums)
        self.slots.apply(rec.slot_ops, rec.index, cmp)
        state, order, desc, in_lab_order = self._gather_and_dispatch(rec, cmp)
        num_reqs_padded = desc.num_reqs or n
        cmp.check(rec.index, "R8", "num_reqs_after_padding", rec.batch.num_reqs_after_padding, num_reqs_padded)

        # The batch in vLLM's order (the lab's arrays, permuted by vLLM's order).
        idx_mapping_np = self.slots.idx_mapping(rec.inst) if in_lab_order else None
        if idx_mapping_np is None:
            return  # later fields would only repeat the order disagreement
        inputs = self._prepare_inputs(rec, cmp, order, desc, num_reqs_padded)
        idx_mapping = torch.from_numpy(idx_mapping_np.astype(np.int64))
        qsl = torch.from_numpy(inputs.qsl_np.copy())

        # R6/R7: vLLM's BlockTables and its Triton kernels (interpreted: slow, so they can be skipped).
        table = torch.from_numpy(rec.table)
        if kernels:
            table = self._block_tables(
                rec, cmp, idx_mapping, num_reqs_padded, qsl, inputs.qsl_np, inputs.positions, desc, n
            )

        batch = self._input_batch(state, inputs, idx_mapping, idx_mapping_np, qsl, desc, n, num_reqs_padded)
        target_msl = self._check_prepare_attn(rec, cmp, batch, desc, table)
        if self.k:
            self.drafts.compare(rec, cmp, batch, state, desc, target_msl, inputs.ub)

    def _gather_and_dispatch(self, rec: RecordedStep, cmp: Comparison):
        """R8: batch order and uniform count, from the real gather_batch_req_state, then the real
        CUDA-graph dispatch. Returns vLLM's batch state, its order as slots of the lab's batch, the
        descriptor, and whether the lab's order agrees."""
        out = rec.out
        n = len(out.req_nums)
        ids = [str(int(i)) for i in out.inst]
        sched_out = SimpleNamespace(
            num_scheduled_tokens={r: int(t) for r, t in zip(ids, out.num_scheduled_tokens)},
            total_num_scheduled_tokens=int(out.num_scheduled_tokens.sum()),
            scheduled_spec_decode_tokens={r: [0] * int(d) for r, d in zip(ids, out.num_draft_tokens) if d},
        )
        slot = {r: i for i, r in enumerate(ids)}
        comp_prefill = np.minimum(out.num_computed_tokens, rec.prefill_len)
        self.runner.req_states = SimpleNamespace(
            req_id_to_index=slot,
            prefill_len=SimpleNamespace(np=rec.prefill_len),
            num_computed_prefill_tokens=comp_prefill,
            max_seq_len=None,
        )
        state, uniform = self.runner.gather_batch_req_state(sched_out, False)
        order = np.array([slot[r] for r in state.req_ids])
        lab_order = [str(int(i)) for i in rec.inst]
        cmp.check(rec.index, "R8", "batch_order", lab_order, list(state.req_ids))
        max_query_len = None if state.has_prefill else int(out.num_scheduled_tokens.max())
        desc = self.cg_manager.dispatch(n, state.num_tokens, uniform, 0, max_query_len)
        cmp.check(rec.index, "R8", "uniform_token_count", rec.dispatch_args[2], uniform)
        cmp.check(rec.index, "R8", "cudagraph_mode", rec.cg_mode, desc.cg_mode.name)
        cmp.check(rec.index, "R8", "num_tokens_after_padding", rec.batch.num_tokens_after_padding, desc.num_tokens)
        return state, order, desc, lab_order == list(state.req_ids)

    def _prepare_inputs(self, rec: RecordedStep, cmp: Comparison, order: np.ndarray, desc, num_reqs_padded: int):
        """R1: vllm model_runner.py prepare_inputs, inline there: the CPU's upper bound (checked), the
        query starts, the exact lengths and the positions of the batch in vLLM's order."""
        out = rec.out
        n = len(out.req_nums)
        num_sched = out.num_scheduled_tokens[order].astype(np.int32)
        comp_cpu = out.num_computed_tokens[order]
        num_tokens = int(num_sched.sum())
        ub = np.zeros(num_reqs_padded, dtype=np.int32)
        np.add(comp_cpu, num_sched, out=ub[:n])
        cmp.check(rec.index, "R1", "seq_lens_cpu_upper_bound", rec.batch.seq_lens_cpu_upper_bound, ub)
        qsl_np = np.empty(self.max_num_reqs + 1, dtype=np.int32)
        qsl_np[0] = 0
        np.cumsum(num_sched, out=qsl_np[1 : n + 1])
        qsl_np[n + 1 :] = num_tokens
        qsl_np = qsl_np[: num_reqs_padded + 1]
        seq_lens = np.zeros(num_reqs_padded, dtype=np.int32)
        seq_lens[:n] = rec.batch.seq_lens[:n]  # exact lengths: GPU-side state the lab models
        positions = np.zeros(max(desc.num_tokens, num_tokens), dtype=np.int64)
        starts = seq_lens[:n] - num_sched
        positions[:num_tokens] = np.repeat(starts, num_sched) + (
            np.arange(num_tokens) - np.repeat(qsl_np[:n], num_sched)
        )
        return SimpleNamespace(
            num_sched=num_sched, num_tokens=num_tokens, ub=ub, qsl_np=qsl_np, seq_lens=seq_lens, positions=positions
        )

    def _input_batch(self, state, inputs, idx_mapping, idx_mapping_np, qsl, desc, n: int, num_reqs_padded: int):
        """The InputBatch vLLM's prepare_attn reads, with the lab's arrays in vLLM's order."""
        torch = self.V.torch
        return SimpleNamespace(
            req_ids=list(state.req_ids),
            num_reqs=n,
            num_reqs_after_padding=num_reqs_padded,
            num_tokens=inputs.num_tokens,
            num_tokens_after_padding=desc.num_tokens,
            idx_mapping=idx_mapping,
            idx_mapping_np=idx_mapping_np,
            query_start_loc_np=inputs.qsl_np,
            query_start_loc=qsl,
            max_query_len=None,
            num_scheduled_tokens=inputs.num_sched,
            seq_lens=torch.from_numpy(inputs.seq_lens),
            seq_lens_cpu_upper_bound=torch.from_numpy(inputs.ub),
            pcp=None,
            dcp_local_seq_lens=None,
            positions=torch.from_numpy(inputs.positions),
            is_prefilling_np=state.is_prefilling_np,
            prefill_runs_as_decode_np=state.prefill_runs_as_decode_np,
            num_draft_tokens_per_req=state.num_draft_tokens_np,
            prompt_lens=None,
            fast_prefill=None,
            decode_graph_eligible=state.decode_graph_eligible,
        )

    def _check_prepare_attn(self, rec: RecordedStep, cmp: Comparison, batch, desc, table) -> int:
        """R2: the real prepare_attn, normal call, against the lab's metadata; R3/R9: what a FULL replay's
        kernel sees. Returns vLLM's target max_seq_len."""
        V, s = self.V, self.s
        with capture_build_attn_metadata(V) as calls:
            self.model_state.prepare_attn(batch, desc.cg_mode, (table,), None, [], None)
        (kw,) = calls
        meta = rec.attn_metadata["fixed"]
        cmp.check(rec.index, "R2", "max_seq_len", meta.max_seq_len, int(kw["max_seq_len"]))
        if s.model_state == "encoder_only":
            # The encoder attention's own metadata: its max_seq_len, and a block table of zeros that no walk
            # reads (the lab walks no rows: its out-of-range counts are 0 in both modes).
            cm = self.encoder_metadata.pop()
            cmp.check(rec.index, "R2", "encoder max_seq_len", meta.max_seq_len, int(cm.max_seq_len))
            cmp.check(rec.index, "R2", "encoder block table is the dummy", True, not cm.block_table_tensor.any())
            cmp.check(rec.index, "R2", "walked entries", rec.walked, 0)
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
            cmp.check(
                rec.index,
                "R3",
                "capture max_seq_len (prepare_attn for_capture)",
                lab_capture.max_seq_len,
                target_kernel,
            )
        cmp.check(
            rec.index,
            "R3",
            "kernel_max_seq_len",
            kernel_visible_max_seq_len(rec.cg_mode, meta.max_seq_len, s.max_model_len),
            target_kernel,
        )
        return target_msl

    def _block_tables(self, rec, cmp, idx_mapping, num_reqs_padded, qsl, qsl_np, positions, desc, n):
        torch, s = self.V.torch, self.s
        bt = self.block_tables
        groups = bt.num_kv_cache_groups
        for op in rec.block_ops:
            if op[0] == "add":
                bt.append_block_ids(op[1], ([],) * groups, overwrite=True)
            else:
                _, req_indices, counts, block_ids = op
                off = 0
                for r, c in zip(req_indices.tolist(), counts.tolist()):
                    bt.append_block_ids(r, (block_ids[off : off + c].tolist(),) * groups, overwrite=False)
                    off += c
        bt.apply_staged_writes()
        # vllm model_runner.py prepare_attn: num_computed_tokens=self.req_states.num_computed_tokens.gpu.
        nct = num_computed_tokens_by_slot(rec, idx_mapping.numpy(), self.max_num_reqs, torch)
        table, *sliding = bt.gather_block_tables(idx_mapping, num_reqs_padded, num_computed_tokens=nct)
        cmp.check_table(rec.index, "R6", "block_table", rec.table, table.numpy())
        if sliding:
            cmp.check_table(rec.index, "R11", "sliding block_table", rec.sliding_table, sliding[0].numpy())
        slots = bt.compute_slot_mappings(idx_mapping, qsl, torch.from_numpy(positions), desc.num_tokens)[0].numpy()
        lab_slots = compute_slot_mappings(rec.table, qsl_np[: n + 1], positions, s.block_size, desc.num_tokens)
        cmp.check_table(rec.index, "R7", "slot_mapping", lab_slots[None, :], slots[None, :])

        return table
