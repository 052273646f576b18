"""The conformance suite: ``conform(scenario)``, the seeded random scenarios, every preset, and the CLI."""

from __future__ import annotations

import numpy as np

from lab.engine.cudagraph import capture_sizes
from lab.engine.sliding_window import masking_reach
from lab.presets import list_presets
from lab.random_scenarios import SUITE_LIMITS, NumpyPick, random_scenario_with
from lab.real_vllm.conform.agreement import Comparison
from lab.real_vllm.conform.recording import record_engine
from lab.real_vllm.conform.vllm_config import vllm_capture_sizes
from lab.real_vllm.conform.vllm_mrv2 import VLLM_VERSION, VllmMRV2
from lab.scenario import get_preset
from lab.speculators import SPECULATIVE_METHODS, speculator


def conform(scenario, kernels: bool = True, max_disagreements: int = 20) -> Comparison:
    """Run ``scenario`` through the lab's engine and vLLM's MRV2 code; return the comparison.

    ``kernels=False`` skips R6/R7 (vLLM's Triton kernels, interpreted on the CPU: most of the time)."""
    records = record_engine(scenario)
    # R8's sizes come from vLLM's own config code, and the lab's are compared with them.
    sizes, max_size = vllm_capture_sizes(scenario)
    cmp = Comparison()
    cmp.check("config", "R8", "cudagraph_capture_sizes (_set_cudagraph_sizes)", capture_sizes(scenario), sizes)
    vl = VllmMRV2(scenario, sizes, max_size)
    if scenario.sliding_window:  # R11's reach: vLLM's SlidingWindowSpec.num_retained_tokens
        cmp.check("config", "R11", "sliding_window_reach", masking_reach(scenario), vl.sliding_window_reach)
    for rec in records:
        vl.step(rec, cmp, kernels)
        if len(cmp.disagreements) >= max_disagreements:
            break
    return cmp


def random_scenario(seed: int):
    """A small random scenario (seeded): lab/random_scenarios.py's generator, the one the property
    tests draw from too, at the suite's size (1-10 requests)."""
    pick = NumpyPick(np.random.default_rng(seed))
    return random_scenario_with(pick, SUITE_LIMITS, name=f"random-{seed}")


def random_speculator_scenario(seed: int):
    """A small random scenario with drafts, for every speculator the lab models (the census): K 1..4, each
    ``method`` in turn, the per-step and the fused draft path, every CUDA-graph mode, both model states,
    sometimes a pool that forces preemption."""
    rng = np.random.default_rng([seed, 22])
    base = random_scenario(seed)
    method = SPECULATIVE_METHODS[seed % len(SPECULATIVE_METHODS)]
    k = int(rng.integers(1, 5))
    k = speculator(method).required_k or k  # "extract_hidden_states requires num_speculative_tokens to be 1"
    return base.replace(
        num_speculative_tokens=k,
        speculative_method=method,
        draft_decode_fused=bool((seed // len(SPECULATIVE_METHODS)) % 2),
        max_num_batched_tokens=max(base.max_num_batched_tokens, 1 + k),
        num_gpu_blocks=None,
        name=f"random-speculator-{seed}",
    )


def random_encoder_scenario(seed: int):
    """A random scenario on an encoder state, each in turn: no chunked prefill, so the budget holds
    max_model_len (SchedulerConfig.verify_max_model_len); encoder-only pools (K = 0, one output token)."""
    base = random_scenario(seed)
    state = ("encoder_decoder", "encoder_only")[seed % 2]
    tokens = max(base.max_num_batched_tokens, base.max_model_len)
    if state == "encoder_decoder":
        return base.replace(model_state=state, max_num_batched_tokens=tokens, name=f"random-encdec-{seed}")
    requests = tuple(r.__class__(r.arrival_step, r.prompt_len, 1) for r in base.requests)
    return base.replace(
        model_state=state,
        max_num_batched_tokens=tokens,
        num_speculative_tokens=0,
        requests=requests,
        name=f"random-enconly-{seed}",
    )


def random_window_scenario(seed: int):
    """A small random scenario with a sliding-window KV group (R11): ``random_scenario``'s settings, a
    window from 1 token to beyond the prompts, sometimes drafts (multi-module MTP retains K - 1 more
    tokens below the window)."""
    rng = np.random.default_rng([seed, 11])
    base = random_scenario(seed)
    window = int(min(rng.choice([1, 2, 5, 16, 33, 64, 128, 200]), base.max_model_len))
    method = str(rng.choice(["eagle", "mtp_multi_module", "draft_model"]))
    return base.replace(
        sliding_window=window,
        speculative_method=method if base.num_speculative_tokens else "eagle",
        name=f"random-window-{seed}",
    )


# ---- the suite's scenario set and the CLI -------------------------------------------------------

# The conformance suite (tests/conformance) and `python -m lab conform --all` run the same set.
NUM_RANDOM = 220
NUM_RANDOM_SPECULATORS = 80  # R1-R5 and R8 only: the speculator does not change R6/R7
NUM_RANDOM_ENCODER = 30  # R1-R3 and R8 on the encoder-decoder and encoder-only states
NUM_RANDOM_WINDOWS = 24  # R11 (and every other rule): vLLM's kernel with a sliding-window group, every one
KERNEL_EVERY = 4  # R6/R7 (interpreted Triton kernels) on every 4th random scenario and every preset


def suite_cases():
    """(label, scenario, kernels) for every preset, NUM_RANDOM seeded random scenarios, the speculator
    census and NUM_RANDOM_WINDOWS scenarios with a sliding window."""
    cases = [(f"preset {name}", get_preset(name), True) for name in list_presets()]
    cases += [(f"random {seed}", random_scenario(seed), seed % KERNEL_EVERY == 0) for seed in range(NUM_RANDOM)]
    cases += [(f"speculator {seed}", random_speculator_scenario(seed), False) for seed in range(NUM_RANDOM_SPECULATORS)]
    cases += [(f"encoder {seed}", random_encoder_scenario(seed), False) for seed in range(NUM_RANDOM_ENCODER)]
    cases += [(f"window {seed}", random_window_scenario(seed), True) for seed in range(NUM_RANDOM_WINDOWS)]
    return cases


def format_failure(label: str, cmp: Comparison, limit: int = 10) -> str:
    lines = [f"{label}: {len(cmp.disagreements)} disagreement(s) between the lab and vLLM {VLLM_VERSION}:"]
    lines += [f"  {d}" for d in cmp.disagreements[:limit]]
    return "\n".join(lines + ["", cmp.table()])
