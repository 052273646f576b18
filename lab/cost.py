"""What a piece of work costs, from its declared sizes alone, before anything is built: the one cost model that every
surface running work for someone else checks (the app's runs and ``?spec=`` links, uploaded traces, deployment
answers, sweep points, the step data the page steps through), and the budgets it is checked against.

A run's cost (``Cost``) is three numbers the work grows with:

    steps   engine steps (``estimate_steps``: an upper bound of the scheduler's work)
    rows    batch rows, a request in a step's batch summed over the steps (the engine's and the trace's arrays)
    cells   block-table entries the views read: every row of every step is a row of a block table
            ``block_table_width(max_model_len, block_size)`` columns wide (lab.trace.Trace.block_table), so
            ``rows x width``. A 28-character scenario within the step budget (``2p1o8_mml=16384k_bs=1``) is
            18 rows of 16M columns: 300M entries, 3 GB a run (hostile probe of 2026-12-07, C2)

and ``engine_seconds`` / ``step_data_seconds`` turn them into the time here, so a sweep's estimate and a run's
refusal come from the same numbers. ``spec_floor`` bounds a scenario text's rows from its request
groups before a single request is made (``1000000p1o1`` is 11 characters and a million requests: 25 s and
350 MB were spent before the old budget refused it, C4).
``capture_size_problem`` bounds the CUDA-graph capture sizes a line or a scenario declares: the engine's
dispatch table has one entry per token count up to the largest (lab.engine.cudagraph.CudaGraphManager), and a
``max_cudagraph_capture_size`` grid is one size per 16 tokens (a 98-character ``vllm serve`` line built a
6-billion-entry set, C1).

The budgets themselves are data (``Budget``); the app's (``APP``) and its messages are lab.app.room.budget's.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.blocks import cdiv
from lab.spec_grammar import MAX_CAPTURE_SIZE

# The largest CUDA-graph capture size the lab models (lab.spec_grammar.MAX_CAPTURE_SIZE, which the Scenario checks):
# vLLM's own default grid stops at 512 (1,024 on SM100, vllm/config/vllm.py _set_cudagraph_sizes); this is 128x
# that, and its grid (1, 2, 4, 8..248 by 8, 256.. by 16) about 4,100 sizes. Past it the engine's dispatch table
# (one entry per token count) and the grid grow without bound, so a line or a scenario declaring more is refused
# before either is built. vLLM itself sets no limit.

# What one unit costs here, in seconds of one core of the 2-core CI machine, measured on the presets (simulate and
# lab.export.payload.step_payload of short-decode-long-context, stale-block-reuse, mamba-hybrid, eagle-k3): the
# engine, per step and per batch row; the step data (every view at every step), per step and per block-table
# entry. Only the order of magnitude matters: they tell "under a second" from "minutes".
ENGINE_SECONDS_PER_STEP = 1.75e-4  # 1p1o1000000 ran at about 5,700 steps/s (probe 2026-12-07, C3)
ENGINE_SECONDS_PER_ROW = 6e-6
STEP_DATA_SECONDS_PER_STEP = 9e-3  # stale-block-reuse: 1,007 steps, 9.2 s
STEP_DATA_SECONDS_PER_CELL = 1.9e-7  # short-decode-long-context: 50.6M entries, 11.2 s


@dataclass(frozen=True)
class Cost:
    """What a run costs (see the module's note): engine steps, batch rows, block-table columns."""

    steps: int
    rows: int
    width: int

    @property
    def cells(self) -> int:
        """Block-table entries the views read: every row a row of a ``width``-column table."""
        return self.rows * self.width

    @property
    def engine_seconds(self) -> float:
        """About how long the engine takes to run it here (one core, one mode)."""
        return self.steps * ENGINE_SECONDS_PER_STEP + self.rows * ENGINE_SECONDS_PER_ROW

    @property
    def step_data_seconds(self) -> float:
        """About how long its step data (every view at every step, lab/export/payload.py) takes to build here."""
        return self.steps * STEP_DATA_SECONDS_PER_STEP + self.cells * STEP_DATA_SECONDS_PER_CELL


@dataclass(frozen=True)
class Budget:
    """At most ``steps`` engine steps, ``rows`` batch rows and ``cells`` block-table entries."""

    steps: int
    rows: int
    cells: int

    def over(self, cost: Cost) -> list[str]:
        """What ``cost`` has past this budget, each as "about N <what> (at most M)"; empty when it fits."""
        said = []
        for name, what, have, most in (
            ("engine steps", "", cost.steps, self.steps),
            ("batch rows", " (requests in a step's batch, summed over the steps)", cost.rows, self.rows),
            ("block-table entries", f" ({cost.rows:,} rows x {cost.width:,} columns)", cost.cells, self.cells),
        ):
            if have > most:
                said.append(f"about {have:,} {name}{what}, over the {most:,} {name} the budget allows")
        return said


def estimate_steps(
    prompts: list[int],
    outputs: list[int],
    arrivals: list[int],
    max_num_seqs: int,
    max_num_batched_tokens: int,
    k: int = 0,
) -> int:
    """An upper bound of the engine steps for these requests, from the sizes alone (no engine); O(n log n).

    The requests in waves of ``max_num_seqs`` (each wave as long as its longest output), the prompts through
    ``max_num_batched_tokens`` a step, the decode tokens (1 + K a request a step) through the same budget, and
    the arrivals' span. Continuous batching and accepted drafts only make a run shorter; a small KV pool that
    preempts more than this allows for is stopped as it passes a budget (lab.app.room.budget.StepBudget)."""
    if not outputs:
        return 0
    waves = sum(sorted(outputs, reverse=True)[:: max(max_num_seqs, 1)])
    decode = max(waves, cdiv(sum(outputs) * (1 + k), max(max_num_batched_tokens, 1)))
    span = max(arrivals) - min(arrivals) if arrivals else 0
    return cdiv(sum(prompts), max(max_num_batched_tokens, 1)) + decode + span


def scenario_steps(scenario) -> int:
    """``estimate_steps`` of a Scenario (a small KV pool, ``blocks=``, holds fewer requests at once), at most its
    own ``max_num_steps``."""
    rs, seqs = scenario.requests, scenario.max_num_seqs
    if scenario.num_gpu_blocks is not None and rs:
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
    """About how many batch rows the scenario makes: each request's prefill chunks and decode steps."""
    t, mml = max(scenario.max_num_batched_tokens, 1), scenario.max_model_len
    rows = sum(cdiv(min(r.prompt_len, mml), t) + r.output_len for r in scenario.requests)
    return min(rows, scenario.max_num_steps * scenario.max_num_seqs)  # a run stops after max_num_steps


def scenario_cost(scenario) -> Cost:
    """A Scenario's cost, from its sizes (O(requests), nothing simulated)."""
    return Cost(scenario_steps(scenario), scenario_rows(scenario), scenario.max_num_blocks_per_req)


def trace_cost(num_steps: int, num_rows: int, width: int) -> Cost:
    """A recorded trace's cost (an upload): its own steps, rows and block-table width, as declared."""
    return Cost(num_steps, num_rows, width)


def spec_floor(spec: str) -> Cost:
    """A lower bound of the cost of a scenario text, from its request groups before any request is made
    (lab.spec_grammar.read_groups): each request is at least one row, and a step's row decodes at most 1 + K
    tokens (K at most ``MAX_SPECULATIVE_TOKENS``). Steps and width are left at their floor (0 and 1): the controls
    may still change them, and the built scenario is checked again (``scenario_cost``) once its requests are known
    to be few. ValueError for a text the grammar cannot read."""
    from lab.scenario import MAX_SPECULATIVE_TOKENS

    max_seqs = 4096  # the Scenario's own bound on max_num_seqs
    from lab.spec_grammar import read_groups

    groups, settings = read_groups(spec)
    rows = sum(count * cdiv(max(output, 1), 1 + MAX_SPECULATIVE_TOKENS) for count, _, _, _, output in groups)
    if isinstance(settings.get("max_num_steps"), int):  # a run stopped after steps= holds fewer
        rows = min(rows, settings["max_num_steps"] * max_seqs)
    return Cost(steps=0, rows=rows, width=1)


def capture_size_problem(largest: int) -> str | None:
    """Why a CUDA-graph capture size (the largest a line or a scenario declares) is past what the lab models;
    None when it is within ``MAX_CAPTURE_SIZE``."""
    if largest <= MAX_CAPTURE_SIZE:
        return None
    return (
        f"a CUDA-graph capture size of {largest:,} tokens: the lab models capture sizes up to {MAX_CAPTURE_SIZE:,} "
        f"(vLLM's default grid stops at 512, or 1,024 on SM100; past it the grid holds one size per 16 tokens). "
        "Lower max_cudagraph_capture_size, the cudagraph_capture_sizes or max_num_batched_tokens"
    )
