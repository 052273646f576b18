"""The lab's one generator of small random scenarios: ``random_scenario_with(pick, limits)``.

Two kinds of caller draw from it: the conformance suite and the golden and plain-rule tests, seeded
(``NumpyPick``: lab/real_vllm/conform/suite.py ``random_scenario(seed)``), and the property tests, where
Hypothesis draws each value so that it can shrink a failure (tests/test_properties.py passes its own
``pick``). The structure (which fields vary, over which values) is written once, here; a ``pick``
only says how one value is drawn, and ``Limits`` how big the scenarios get.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.scenario import Scenario

MAX_MODEL_LENS = (256, 512, 1024, 2048)
BLOCK_SIZES = (1, 2, 4, 8, 16, 32)
MODEL_STATES = ("default", "mamba_hybrid")
# FULL_AND_PIECEWISE twice as often: FULL replays are where rows get padded.
CUDAGRAPH_MODES = ("FULL_AND_PIECEWISE", "FULL_AND_PIECEWISE", "PIECEWISE", "NONE")
MAX_K = 4
MAX_NUM_SEQS = 8
MAX_BATCHED_TOKENS = 1024
MAX_CAPTURE_SIZE = 32
MAX_CAPTURE_SIZES = 5


@dataclass(frozen=True)
class Limits:
    """How big the random scenarios get (requests are (arrival step, prompt tokens, output tokens))."""

    max_requests: int
    max_arrival: int
    max_prompt: int  # below max_model_len in any case
    max_output: int
    max_num_steps: int  # far above what these scenarios need; a livelock shows as truncated


# The suite's (and the golden tests'): kept small so that vLLM's interpreted kernels stay quick.
SUITE_LIMITS = Limits(max_requests=10, max_arrival=14, max_prompt=400, max_output=40, max_num_steps=5_000)
# The property tests': somewhat bigger, the engine alone runs them.
PROPERTY_LIMITS = Limits(max_requests=12, max_arrival=20, max_prompt=600, max_output=80, max_num_steps=20_000)


class NumpyPick:
    """Seeded draws from a numpy Generator. The order and the calls are those random_scenario has
    always made, so a seed names the same scenario as before (tests/data/engine_golden.json)."""

    def __init__(self, rng):
        self.rng = rng

    def one_of(self, options):
        return self.rng.choice(list(options)).item()

    def integer(self, lo: int, hi: int) -> int:  # lo..hi, both included
        return int(self.rng.integers(lo, hi + 1))

    def coin(self) -> bool:
        return bool(self.rng.random() < 0.5)

    def requests(self, limits: Limits, max_model_len: int) -> list[tuple[int, int, int]]:
        n = self.integer(1, limits.max_requests)
        top = min(limits.max_prompt, max_model_len - 1)
        return [
            (self.integer(0, limits.max_arrival), self.integer(1, top), self.integer(1, limits.max_output))
            for _ in range(n)
        ]

    def capture_sizes(self) -> tuple[int, ...] | None:
        if not self.coin():
            return None
        size = self.integer(1, MAX_CAPTURE_SIZES)
        return tuple(sorted(set(int(x) for x in self.rng.integers(1, MAX_CAPTURE_SIZE + 1, size=size))))

    def acceptance(self) -> float:
        return float(self.rng.choice([0.0, 1.0, self.rng.random()]))


def random_scenario_with(pick, limits: Limits, name: str = "") -> Scenario:
    """A small random scenario: requests within ``limits``, every model state and CUDA-graph mode, K
    0..4, sometimes explicit capture sizes, and sometimes a KV cache barely big enough to force
    preemption. ``pick`` draws each value (``NumpyPick`` or a Hypothesis adapter)."""
    mml = pick.one_of(MAX_MODEL_LENS)
    k = pick.integer(0, MAX_K)
    requests = pick.requests(limits, mml)
    capture = pick.capture_sizes()
    s = Scenario(
        requests=requests,
        max_model_len=mml,
        block_size=pick.one_of(BLOCK_SIZES),
        model_state=pick.one_of(MODEL_STATES),
        num_speculative_tokens=k,
        cudagraph_mode=pick.one_of(CUDAGRAPH_MODES),
        cudagraph_capture_sizes=capture,
        max_num_seqs=pick.integer(1, MAX_NUM_SEQS),
        max_num_batched_tokens=pick.integer(max(8, 1 + k), MAX_BATCHED_TOKENS),
        acceptance_rate=pick.acceptance(),
        seed=pick.integer(0, 2**32 - 1),
        max_num_steps=limits.max_num_steps,
        name=name,
    )
    if pick.coin():
        smallest = max(s.blocks_per_request(r) for r in s.requests) + 1
        s = s.replace(num_gpu_blocks=pick.integer(smallest, 2 * smallest))
    return s
