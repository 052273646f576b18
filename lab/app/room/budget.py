"""The app's budget for engine work on a shared server (a room): how many engine steps one run, answer or
replay may take, estimated from a scenario's declared sizes before anything is simulated, and checked again
while the engine runs. Past it the user is told inline which command to run on their own machine instead.

The estimate is an upper bound of the scheduler's work, from the sizes alone (no engine): the requests in
waves of ``max_num_seqs`` (each wave as long as its longest output), the prompts through
``max_num_batched_tokens`` a step, the decode tokens (1 + K a request a step) through the same budget, and
the arrivals' span; a KV pool given (``blocks=``) holds fewer requests at once. Continuous batching and
accepted drafts only make a run shorter; a run that still goes past the budget (a pool that preempts more
than the estimate allows for) is stopped by ``StepBudget`` as it passes it.
"""

from __future__ import annotations

import shlex

# The engine steps one app run may take: about 3.5x the largest preset's (stale-block-reuse, 575 steps). The
# engine takes about 1 s for it here; the step data the page then steps through (every view at every step,
# lab/app/steps_data.py) costs 10-60 ms a step, so this also bounds that to about a minute of one core.
MAX_APP_STEPS = 2_000
# The batch rows (a request in a step's batch, summed over the steps) one app run may make: about 6.5x the
# largest preset's (short-decode-long-context, 6,145 rows). The step data grows with them: 64 requests decoding
# 2,000 tokens (128,000 rows) took 92 s to build and 35 MB compressed.
MAX_APP_ROWS = 40_000
# Runs up to this many steps (every preset) run at once; longer ones within MAX_APP_STEPS take a place in
# the room's line for heavy work (lab.app.room.line.HEAVY), one at a time.
MAX_LIGHT_STEPS = 600


class OverBudget(ValueError):
    """A run, answer or replay over the app's step budget; its message names the command to run instead."""


def _cdiv(a: int, b: int) -> int:
    return -(-a // max(b, 1))


def estimate_steps(
    prompts: list[int],
    outputs: list[int],
    arrivals: list[int],
    max_num_seqs: int,
    max_num_batched_tokens: int,
    k: int = 0,
) -> int:
    """An upper bound of the engine steps for these requests (see the module's note); O(n log n), nothing built."""
    if not outputs:
        return 0
    waves = sum(sorted(outputs, reverse=True)[:: max(max_num_seqs, 1)])
    decode = max(waves, _cdiv(sum(outputs) * (1 + k), max_num_batched_tokens))
    span = max(arrivals) - min(arrivals) if arrivals else 0
    return _cdiv(sum(prompts), max_num_batched_tokens) + decode + span


def scenario_steps(scenario) -> int:
    """``estimate_steps`` of a Scenario, at most its own ``max_num_steps``."""
    rs, seqs = scenario.requests, scenario.max_num_seqs
    if scenario.num_gpu_blocks is not None and rs:  # a small KV pool holds fewer requests at once
        largest = max(scenario.blocks_per_request(r) for r in rs)
        seqs = min(seqs, max(1, (scenario.num_gpu_blocks - 1) // max(largest, 1)))
    est = estimate_steps(
        [min(r.prompt_len, scenario.max_model_len) for r in rs],
        [r.output_len for r in rs],
        [r.arrival_step for r in rs],
        seqs,
        scenario.max_num_batched_tokens,
        scenario.num_speculative_tokens,
    )
    return min(est, scenario.max_num_steps)


def scenario_rows(scenario) -> int:
    """About how many batch rows (a request in a step's batch, summed over the steps) the scenario makes: each
    request's prefill chunks and decode steps. The step data's cost and size grow with them."""
    t, mml = scenario.max_num_batched_tokens, scenario.max_model_len
    return sum(_cdiv(min(r.prompt_len, mml), t) + r.output_len for r in scenario.requests)


def cli_instead(spec_text: str) -> str:
    """The commands that run ``spec_text`` on the user's own machine and show its trace."""
    return (
        f"python -m lab simulate --spec {shlex.quote(spec_text)} --out t.json, then python -m lab show t.json, or "
        "python -m lab export t.json --out t.html (one HTML file that steps by itself in any browser)"
    )


def _over(what: str, steps: int, rows: int) -> str | None:
    if steps <= MAX_APP_STEPS and rows <= MAX_APP_ROWS:
        return None
    return (
        f"{what} about {steps:,} engine steps and {rows:,} batch rows; the app takes at most {MAX_APP_STEPS:,} steps "
        f"and {MAX_APP_ROWS:,} rows (requests in a step's batch, summed over the steps) on this shared server."
    )


def check_scenario(scenario, spec_text: str) -> int:
    """The scenario's estimated steps; ``OverBudget`` (naming the commands to run instead) past the budget."""
    steps = scenario_steps(scenario)
    too_big = _over("this scenario is", steps, scenario_rows(scenario))
    if too_big:
        raise OverBudget(f"{too_big} Run it on your machine: {cli_instead(spec_text)}")
    return steps


def check_trace(trace, name: str) -> None:
    """An uploaded trace the app can step (its step data is built on this server): ``OverBudget`` past it."""
    too_big = _over(f"{name} has", len(trace.steps), int(trace.arrays["row_offsets"][-1]))
    if too_big:
        raise OverBudget(
            f"{too_big.replace('has about', 'has')} Open it on your machine: python -m lab show {shlex.quote(name)}, "
            f"or python -m lab export {shlex.quote(name)} --out t.html (one HTML file that steps by itself)"
        )


class StepBudget:
    """A ``simulate(progress=...)`` callback that stops the engine once it passes ``MAX_APP_STEPS`` (the
    estimate is a bound, but a small KV pool can preempt): raises ``OverBudget``; ``also`` is called too."""

    def __init__(self, spec_text: str, also=None, limit: int = MAX_APP_STEPS):
        self.spec_text, self.also, self.limit = spec_text, also, limit

    def __call__(self, n: int) -> None:
        if n > self.limit:
            raise OverBudget(
                f"this scenario went past {self.limit:,} engine steps, the most the app runs on this shared "
                f"server; stopped. Run it on your machine: {cli_instead(self.spec_text)}"
            )
        if self.also is not None:
            self.also(n)
