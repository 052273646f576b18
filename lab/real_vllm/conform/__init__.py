"""Conformance: the lab's engine, step by step, against vLLM 0.33.0's own Model Runner V2 code on the CPU.

The engine runs a scenario; every call it makes into its own model state, CUDA-graph manager, block
tables and speculator is recorded through the engine's step observer hook (``record_engine``).
The same step is then fed into vLLM's real classes and functions (``VllmMRV2``), built on the CPU
without a GPU:

- Inputs: the capture sizes from ``VllmConfig._set_cudagraph_sizes`` (compared with the lab's, R8) and
  the request slots from ``GPUModelRunner.finish_requests`` + ``RequestState`` (compared, R6), so the
  suite does not feed the lab's own answers to vLLM (docs/fidelity.md, "What the suite takes from the lab").
- R8: ``GPUModelRunner.gather_batch_req_state`` (batch order, uniform decode count) and
  ``CudaGraphManager._init_candidates`` / ``dispatch``; the speculator's ``SpeculatorCudaGraphManager``
  for the draft prefill and draft decodes (``dispatch`` + ``specialize_spec_tokens``).
- R1: ``seq_lens_cpu_upper_bound`` rebuilt as ``prepare_inputs`` does (inline there, so re-stated here).
- R2: ``DefaultModelState.prepare_attn`` / ``MambaHybridModelState.prepare_attn``; what they pass to
  ``build_attn_metadata`` is captured.
- R3/R9: ``prepare_inputs_to_capture`` for each FULL graph a step replays: the ``max_seq_len`` frozen in
  the graph (``for_capture=True``) against what the lab says the kernel sees.
- R4/R5: the scenario's own speculator class (``EagleSpeculator``, ``MTPSpeculator``,
  ``Gemma4Speculator``, ``MultiModuleMTPSpeculator``, ``StandaloneARSpeculator``): its ``propose`` run up to
  its first GPU work (which sets ``draft_max_seq_len``), the managers its ``init_cudagraph_manager`` makes,
  and ``DraftModelSpeculator._build_attn_metadata`` for every draft pass.
- R6/R7: ``BlockTables.append_block_ids`` / ``apply_staged_writes`` / ``gather_block_tables`` /
  ``compute_slot_mappings``: vLLM's own Triton kernels under ``TRITON_INTERPRET=1`` on CPU tensors,
  compared entry by entry (stale columns included).

The package: lab/real_vllm/conform/recording.py (what the engine did, through its step observer hook),
lab/real_vllm/conform/vllm_mrv2.py (vLLM's objects on the CPU; it needs the conformance environment
``.venv-vllm``, see docs/fidelity.md), lab/real_vllm/conform/vllm_speculators.py (the speculators),
lab/real_vllm/conform/vllm_config.py (the capture sizes), lab/real_vllm/conform/vllm_slots.py (the request slots),
lab/real_vllm/conform/agreement.py (agreement per rule) and lab/real_vllm/conform/suite.py (``conform``, the random
scenarios, the suite and the CLI).

The lab's ``fixed`` mode is compared; ``baseline`` is vLLM before PR #40654 and has no 0.33.0 code
to compare with.
"""

from lab.real_vllm.conform.agreement import RULE_TITLES, RULES, Comparison, Disagreement
from lab.real_vllm.conform.recording import EngineRecording, RecordedStep, record_engine
from lab.real_vllm.conform.suite import KERNEL_EVERY, NUM_RANDOM, conform, format_failure, random_scenario, suite_cases
from lab.real_vllm.conform.vllm_mrv2 import HOW_TO_RUN, VLLM_VERSION, VllmMRV2, VllmUnavailable, load_vllm

__all__ = [
    "RULES",
    "RULE_TITLES",
    "Comparison",
    "Disagreement",
    "EngineRecording",
    "RecordedStep",
    "record_engine",
    "conform",
    "format_failure",
    "random_scenario",
    "suite_cases",
    "NUM_RANDOM",
    "KERNEL_EVERY",
    "VLLM_VERSION",
    "HOW_TO_RUN",
    "VllmMRV2",
    "VllmUnavailable",
    "load_vllm",
]
