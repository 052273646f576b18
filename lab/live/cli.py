"""``python -m lab record`` and ``python -m lab compare`` (the parsers are in lab/cli.py)."""

from __future__ import annotations

import sys
import time

from lab.live.limits import LiveUnavailable, ScenarioRefused, available, cpu_variant, refusals


def cmd_record(args, scenario, print_trace) -> int:
    """``scenario`` from --preset/--spec and the trace printer are lab/cli.py's (no import back)."""
    ok, why = available(args.device)
    if not ok:
        print(f"error: the live recorder cannot run here: {why}", file=sys.stderr)
        return 2
    if not args.as_is and args.device == "cpu":
        from lab.live.shim import installed_series

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
    last = [0.0]

    def progress(n):
        now = time.perf_counter()
        if now - last[0] > 5:
            last[0] = now
            print(f"  … step {n} ({now - t0:.0f} s)", file=sys.stderr, flush=True)

    from lab.live import record

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
    if args.out:
        trace.save(args.out)
        print(f"trace saved to {args.out}", file=sys.stderr)
    print_trace(trace, every=args.every, show_steps=not args.quiet)
    if args.compare:
        return _compare(trace, None, "live vLLM", "embedded engine")
    return 0


def _compare(a, b, a_label, b_label) -> int:
    from lab.trace.diff import compare_traces
    from lab.trace.recorder import simulate

    if b is None:
        b = simulate(a.scenario)
    cmp = compare_traces(a, b, a_label, b_label)
    print(cmp.table())
    return 0 if cmp.agree else 1


def cmd_compare(args) -> int:
    from lab.trace import Trace

    a = Trace.load(args.a)
    b = Trace.load(args.b) if args.b else None
    a_label = f"{args.a} ({a.meta.get('source', '?')})"
    b_label = f"{args.b} ({b.meta.get('source', '?')})" if b is not None else "the embedded engine on A's scenario"
    return _compare(a, b, a_label, b_label)
