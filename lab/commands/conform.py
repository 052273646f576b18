"""``python -m lab conform``: its parser and the command (the suite's scenarios against vLLM 0.33.0's own
MRV2 code, the agreement table per rule). lab/commands/main.py registers it with ``lab.commands.conform.register(sub)``;
vLLM is imported only when the command runs (in the conformance environment ``.venv-vllm``,
docs/fidelity.md).

    python -m lab conform --preset NAME | --spec TEXT | --random A:B | --all  [--no-kernels]
"""

from __future__ import annotations

import sys
import time

from lab.commands.scenario_args import add_scenario_args
from lab.real_vllm.conform.agreement import Comparison
from lab.real_vllm.conform.suite import KERNEL_EVERY, conform, format_failure, random_scenario, suite_cases
from lab.real_vllm.conform.vllm_mrv2 import VLLM_VERSION, VllmUnavailable, load_vllm
from lab.scenario import get_preset, parse_spec


def register(sub) -> None:
    sp = sub.add_parser("conform", help="compare the engine with vLLM 0.33.0's own MRV2 code (needs .venv-vllm)")
    add_scenario_args(sp, out=False)  # one of --preset, --spec, --random, --all: cmd_conform checks
    sp.add_argument("--random", metavar="A:B", help="the seeded random scenarios A..B-1 of the conformance suite")
    sp.add_argument("--all", action="store_true", help="the whole conformance suite: every preset + the random set")
    sp.add_argument("--no-kernels", action="store_true", help="skip R6/R7 (vLLM's Triton kernels, interpreted)")
    sp.set_defaults(fn=cmd_conform)


def cmd_conform(args, out=None) -> int:
    """``python -m lab conform``: run the comparison and print the agreement table per rule."""
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
            w(f"{label}: {scenario.to_spec()}  ({time.perf_counter() - t:.1f} s, R6/R7 {'on' if kernels else 'off'})\n")
        if cmp.disagreements:
            w(format_failure(label, cmp) + "\n\n")
        total.merge(cmp, label)
    w(
        f"vLLM {VLLM_VERSION} MRV2 code on the CPU vs the lab's engine ('fixed' mode), {len(cases)} scenario(s), "
        f"{time.perf_counter() - t0:.0f} s (steps: scenario steps compared; entries: values compared)\n"
    )
    w(total.table() + "\n")
    w("agree\n" if total.ok else f"DISAGREE: {len(total.disagreements)} disagreement(s)\n")
    return 0 if total.ok else 1
