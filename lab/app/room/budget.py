"""The app's budget for work on a shared server (a room): what one run, upload, answer or replay may cost, from
its declared sizes before anything is built (lab.cost: engine steps, batch rows, block-table entries), and
checked again while the engine runs. Past it the user is told inline which command to run on their own machine.
The cost model is the library's (lab/cost.py); here only the app's limits and its messages.
"""

from __future__ import annotations

import shlex

from lab.cost import Budget, Cost, scenario_cost, spec_floor, trace_cost
from lab.cost import scenario_rows as scenario_rows  # the app's tests read the cost model here too
from lab.cost import scenario_steps as scenario_steps

# The engine steps one app run may take: about 3.5x the largest preset's (stale-block-reuse, 575 steps). The
# engine takes about 1 s for it here; the step data the page then steps through (every view at every step,
# lab/app/steps_data.py) costs 10-60 ms a step, so this also bounds that to about a minute of one core.
MAX_APP_STEPS = 2_000
# The batch rows (a request in a step's batch, summed over the steps) one app run may make: about 6.5x the
# largest preset's (short-decode-long-context, 6,145 rows). The step data grows with them: 64 requests decoding
# 2,000 tokens (128,000 rows) took 92 s to build and 35 MB compressed.
MAX_APP_ROWS = 40_000
# The block-table entries (rows x width) one app run's views may read: about 2.7x the largest preset's
# (short-decode-long-context, 6,176 rows x 8,192 columns = 50.6M, whose step data builds in about 11 s here), and
# room for every deployment example's replay at the tab's default workload (Qwen3-Next + MTP: 4,112 x 16,384 =
# 67.4M). A 1,991-step scenario of 3,982 rows x 1M columns (4.2G entries) took 507 s to build (probe 2026-12-07, C2).
MAX_APP_CELLS = 128 * 2**20
APP = Budget(steps=MAX_APP_STEPS, rows=MAX_APP_ROWS, cells=MAX_APP_CELLS)
# Runs up to this many steps (every preset) run at once; longer ones within MAX_APP_STEPS take a place in
# the room's line for heavy work (lab.app.room.line.HEAVY), one at a time.
MAX_LIGHT_STEPS = 600


class OverBudget(ValueError):
    """A run, answer or replay over the app's budget; its message names the command to run instead."""


def cli_instead(spec_text: str) -> str:
    """The commands that run ``spec_text`` on the user's own machine and show its trace."""
    return (
        f"python -m lab simulate --spec {shlex.quote(spec_text)} --out t.json, then python -m lab show t.json, or "
        "python -m lab export t.json --out t.html (one HTML file that steps by itself in any browser)"
    )


def over_budget(what: str, cost: Cost) -> str | None:
    """``what`` ("this scenario is") and what ``cost`` has past the app's budget; None when it fits."""
    said = APP.over(cost)
    if not said:
        return None
    return f"{what} {'; '.join(said)} on this shared server."


def check_spec_text(spec_text: str) -> None:
    """A scenario text within the app's budget by its request groups alone, before any request is made
    (lab.cost.spec_floor: ``1000000p1o1`` is refused in microseconds, not after 25 s); ``OverBudget`` past it.
    A text the grammar cannot read passes here: parsing it says what is wrong."""
    try:
        floor = spec_floor(spec_text)
    except ValueError:
        return
    too_big = over_budget("this scenario has", floor)
    if too_big:
        raise OverBudget(f"{too_big.replace('about ', 'at least ')} Run it on your machine: {cli_instead(spec_text)}")


def check_scenario(scenario, spec_text: str) -> int:
    """The scenario's estimated steps; ``OverBudget`` (naming the commands to run instead) past the budget."""
    cost = scenario_cost(scenario)
    too_big = over_budget("this scenario is", cost)
    if too_big:
        raise OverBudget(f"{too_big} Run it on your machine: {cli_instead(spec_text)}")
    return cost.steps


def check_trace(trace, name: str) -> None:
    """An uploaded trace the app can step (its step data is built on this server): ``OverBudget`` past it."""
    cost = trace_cost(len(trace.steps), int(trace.arrays["row_offsets"][-1]), int(trace.width))
    too_big = over_budget(f"{name} has", cost)
    if too_big:
        raise OverBudget(
            f"{too_big.replace('about ', '')} Open it on your machine: python -m lab show {shlex.quote(name)}, "
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
