"""``python -m lab conform``: its parser. lab/cli.py registers it with ``lab.conform.cli.register(sub)``;
the command itself is ``lab.conform.suite.cli`` (the suite's scenarios, the agreement table per rule),
which imports vLLM only when it runs (in the conformance environment ``.venv-vllm``, docs/fidelity.md).

    python -m lab conform --preset NAME | --spec TEXT | --random A:B | --all  [--no-kernels]
"""

from __future__ import annotations

from lab.cli_args import add_scenario_args
from lab.conform.suite import cli as run_conform


def register(sub) -> None:
    sp = sub.add_parser("conform", help="compare the engine with vLLM 0.33.0's own MRV2 code (needs .venv-vllm)")
    add_scenario_args(sp, out=False)  # one of --preset, --spec, --random, --all: run_conform checks
    sp.add_argument("--random", metavar="A:B", help="the seeded random scenarios A..B-1 of the conformance suite")
    sp.add_argument("--all", action="store_true", help="the whole conformance suite: every preset + the random set")
    sp.add_argument("--no-kernels", action="store_true", help="skip R6/R7 (vLLM's Triton kernels, interpreted)")
    sp.set_defaults(fn=run_conform)
