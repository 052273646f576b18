"""``python -m lab record``, ``compare`` and ``eras``: real vLLM recorded as a trace, two traces set
against each other, and every era's recording against the engine. lab/commands/main.py registers the three
with ``lab.commands.live.register(sub)``.

    python -m lab record --preset NAME | --spec TEXT  [--out t.json] [--compare] [--as-is] [--no-timing]
                                              (run with .venv-vllm-live/bin/python; docs/live.md)
    python -m lab compare A.json [B.json]     (B left out: the embedded engine on A's scenario)
    python -m lab eras [compare|record|list] [--preset NAME …] [--root DIR]     (docs/eras.md)

Importing this module never imports vllm; ``record`` does, in the live environment.
"""

from __future__ import annotations

import pathlib
import sys
import time

from lab.commands.scenario_args import add_scenario_args, scenario_from_args
from lab.commands.trace import print_trace
from lab.real_vllm.live import eras, record
from lab.real_vllm.live.cpu_platform import describe
from lab.real_vllm.live.limits import LiveUnavailable, ScenarioRefused, available, cpu_variant, refusals
from lab.trace import Trace, era_recordings
from lab.trace.diff import compare_traces
from lab.trace.recorder import simulate
from lab.vllm_env import installed_series


def register(sub) -> None:
    sp = sub.add_parser("record", help="record real vLLM 0.32 MRV2 on this CPU (needs .venv-vllm-live)")
    add_scenario_args(sp)
    sp.add_argument("--compare", action="store_true", help="compare with the embedded engine, field by field")
    sp.add_argument(
        "--as-is",
        action="store_true",
        help="refuse what the CPU engine can't run instead of "
        "recording the closest scenario it can (lab.real_vllm.live.cpu_variant)",
    )
    sp.add_argument("--no-timing", action="store_true", help="do not time vLLM's attention forward")
    sp.add_argument(
        "--device",
        default="cpu",
        choices=["cpu", "cuda"],
        help="cuda: CUDA vLLM on a GPU machine "
        "(scripts/live_gpu.sh; CUDA graphs, fused drafts, hybrid model; unverified without a GPU)",
    )
    sp.add_argument("--every", type=int, default=10, help="print every Nth step")
    sp.add_argument("--quiet", action="store_true", help="print only the totals")
    sp.set_defaults(fn=cmd_record)

    sp = sub.add_parser("compare", help="compare two traces step by step and field by field")
    sp.add_argument("a", help="a trace (e.g. from python -m lab record)")
    sp.add_argument("b", nargs="?", help="another trace; left out: the embedded engine on A's scenario")
    sp.set_defaults(fn=cmd_compare)

    # Every era from the release that shipped it (lab/trace/era_recordings.py, docs/eras.md)
    sp = sub.add_parser("eras", help="compare the engine's three eras with their recordings from vLLM 0.19/0.22/0.32")
    sp.add_argument("action", nargs="?", default="compare", choices=["compare", "record", "list"])
    sp.add_argument("--preset", action="append", help="record only this preset (repeatable)")
    sp.add_argument("--root", help="the recordings' folder (default data/eras)")
    sp.set_defaults(fn=cmd_eras)


def cmd_record(args) -> int:
    scenario = scenario_from_args(args)
    ok, why = available(args.device)
    if not ok:
        print(f"error: the live recorder cannot run here: {why}", file=sys.stderr)
        return 2
    if not args.as_is and args.device == "cpu":
        series = installed_series()
        adapted = cpu_variant(scenario, series)
        if adapted != scenario:
            print(
                f"the CPU engine runs the closest scenario it can (--as-is refuses instead):\n"
                f"  {'; '.join(r.split(':')[0] for r in refusals(scenario, series))} changed\n"
                f"  recorded as: {adapted.to_spec()}",
                file=sys.stderr,
            )
        scenario = adapted
    t0 = time.perf_counter()
    # record() runs the scenario twice, baseline then fixed; each run counts its steps from 1.
    state = {"printed": 0.0, "last": 0, "run": "baseline"}

    def progress(n):
        now = time.perf_counter()
        new_run = n < state["last"]
        if new_run:
            state["run"] = "fixed"
        state["last"] = n
        if new_run or n == 1 or now - state["printed"] > 5:
            state["printed"] = now
            print(f"  … {state['run']} run, step {n} ({now - t0:.0f} s)", file=sys.stderr, flush=True)

    try:
        trace = record(scenario, time_attention=not args.no_timing, progress=progress, device=args.device)
    except (LiveUnavailable, ScenarioRefused) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    live = trace.meta["live"]
    print(
        f"recorded {len(trace.steps)} steps in {live['total_s']:.1f} s (engine build {live['build_s']:.1f} s, "
        f"runs {', '.join(f'{m} {s:.1f} s' for m, s in live['run_s'].items())})",
        file=sys.stderr,
    )
    if live.get("platform"):
        why = live["platform"].get("block_size_why")
        print(
            f"{describe(live['platform'], trace.scenario.block_size)}" + (f" ({why})" if why else ""), file=sys.stderr
        )
    if args.out:
        trace.save(args.out)
        print(f"trace saved to {args.out}", file=sys.stderr)
    print_trace(trace, every=args.every, show_steps=not args.quiet)
    if args.compare:
        return _compare(trace, None, "live vLLM", "embedded engine")
    return 0


def _compare(a, b, a_label, b_label) -> int:
    from lab.deployment import walks

    if b is None:
        b = simulate(a.scenario)
    cmp = compare_traces(a, b, a_label, b_label, walks=walks)  # what each pass is handed, as observed
    print(cmp.table())
    return 0 if cmp.agree else 1


def cmd_compare(args) -> int:
    a = Trace.load(args.a)
    b = Trace.load(args.b) if args.b else None
    a_label = f"{args.a} ({a.meta.get('source', '?')})"
    b_label = f"{args.b} ({b.meta.get('source', '?')})" if b is not None else "the embedded engine on A's scenario"
    return _compare(a, b, a_label, b_label)


def cmd_eras(args) -> int:
    root = pathlib.Path(args.root) if args.root else era_recordings.ERA_DIR
    if args.action == "record":  # in an era environment (make eras)
        eras.record_presets(args.preset, root, log=lambda m: print(m, file=sys.stderr, flush=True))
        return 0
    recordings = era_recordings.load_recordings(root)
    if args.action == "list":
        for (_series, preset), t in sorted(recordings.items()):
            rec = t.meta["recording"]
            print(f"{rec['vllm']:<17} torch {rec['torch']:<14} {rec['era']:<14} {preset:<26} {len(t.steps):>4} steps")
        return 0
    if not recordings:
        print(f"error: no recordings under {root} (make eras records them)", file=sys.stderr)
        return 2
    comparisons = {key: era_recordings.compare_recording(t) for key, t in recordings.items()}
    print(era_recordings.era_table(comparisons))
    return 0 if all(c.agree for c in comparisons.values()) else 1
