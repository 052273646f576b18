"""Command line: ``python -m lab …``.

    python -m lab presets                         list the presets and what each shows
    python -m lab simulate --preset NAME          run a preset, print each step and the totals
    python -m lab simulate --spec "8p1ko64_k=3"   run a scenario written in the grammar
           [--out trace.json] [--every N] [--quiet]
    python -m lab show trace.json                 print a saved trace the same way
    python -m lab bench engine [--steps N] [--reqs N]
                                                  time the engine, steps per second
    python -m lab conform --preset NAME           the engine against vLLM 0.33.0's MRV2 code, per rule
           [--spec TEXT | --random A:B | --all]   (run with .venv-vllm/bin/python; docs/fidelity.md)
"""

from __future__ import annotations

import argparse
import sys
import time

from lab.engine.oor import OOR_CLASSES
from lab.presets import PRESETS, get_preset
from lab.scenario import Scenario, parse_spec
from lab.trace import Trace, TraceFormatError, simulate


def _fmt(n: int) -> str:
    return f"{n:,}"


def _oor_total(counts: dict) -> int:
    return sum(counts[c] for c in OOR_CLASSES)


def print_trace(trace: Trace, every: int = 1, out=None, show_steps: bool = True) -> None:
    out = out or sys.stdout
    s = trace.scenario
    w = out.write
    w(f"scenario: {s.name or '(custom)'}  spec: {s.to_spec()}\n")
    if s.description:
        w(f"  {s.description}\n")
    w(f"  max_model_len={s.max_model_len} block_size={s.block_size} model_state={s.model_state} "
      f"K={s.num_speculative_tokens} cudagraph_mode={s.cudagraph_mode} "
      f"capture sizes up to {max(trace.meta['cudagraph_capture_sizes'] or [0])}\n")
    w(f"  {len(trace.steps)} steps, {len(s.requests)} requests, {trace.meta.get('num_preemptions', 0)} preemptions, "
      f"block-table width {trace.width}; source: {trace.meta.get('source', '?')}\n\n")
    if show_steps:
        w(f"{'step':>5} {'reqs':>4} {'pad':>4} {'tokens':>6} {'graph':<9} "
          f"{'max_seq_len b/f':>17} {'kernel sees b/f':>17} {'out-of-range b/f':>19}\n")
        for st in trace.steps:
            if st.index % every and st.index != len(trace.steps) - 1:
                continue
            msl, kms, oor = st.max_seq_len, st.kernel_max_seq_len, st.oor_all_passes
            w(f"{st.index:>5} {st.num_reqs:>4} {st.num_reqs_padded:>4} {st.num_tokens:>6} {st.cudagraph_mode:<9} "
              f"{msl['baseline']:>8}/{msl['fixed']:<8} {kms['baseline']:>8}/{kms['fixed']:<8} "
              f"{_fmt(_oor_total(oor['baseline'])):>9}/{_fmt(_oor_total(oor['fixed'])):<9}\n")
            if st.drafts and st.index % every == 0:
                d = st.drafts[-1]
                w(f"{'':>5} drafts: {len(st.drafts)} passes, last {d.cudagraph_mode}, draft_max_seq_len "
                  f"{d.max_seq_len['baseline']}/{d.max_seq_len['fixed']}, kernel sees "
                  f"{d.kernel_max_seq_len['baseline']}/{d.kernel_max_seq_len['fixed']}\n")
        w("\n")
    print_totals(trace, out)


def print_totals(trace: Trace, out=None) -> None:
    w = (out or sys.stdout).write
    passes = ((("target passes", False), ("all passes (target + drafts)", True)) if trace.num_speculative_tokens
              else (("all steps", True),))
    for label, all_passes in passes:
        t = trace.totals(all_passes)
        b, f = t["baseline"], t["fixed"]
        w(f"totals over {label}: block-table entries\n")
        w(f"  {'':<12} {'baseline':>16} {'fixed':>16} {'baseline/fixed':>15}\n")
        for key in ("walked", "in_range") + OOR_CLASSES:
            ratio = f"{b[key] / f[key]:.1f}x" if f[key] else ("-" if not b[key] else "inf")
            w(f"  {key:<12} {_fmt(b[key]):>16} {_fmt(f[key]):>16} {ratio:>15}\n")
        ob, of = _oor_total(b), _oor_total(f)
        ratio = f"{ob / of:.1f}x" if of else ("-" if not ob else "inf")
        w(f"  {'out of range':<12} {_fmt(ob):>16} {_fmt(of):>16} {ratio:>15}\n")
    steps = trace.steps
    n_full = sum(1 for st in steps if st.cudagraph_mode == "FULL")
    w(f"FULL-graph steps: {n_full} of {len(steps)}; there the kernel sees the captured max_model_len in both "
      f"modes (R9).\n")


def _scenario_from_args(args) -> Scenario:
    if args.preset and args.spec:
        raise ValueError("give --preset or --spec, not both")
    if args.preset:
        return get_preset(args.preset)
    if args.spec:
        return parse_spec(args.spec)
    raise ValueError("give --preset NAME or --spec TEXT (python -m lab presets lists the presets)")


def cmd_presets(args) -> int:
    for name, (spec, desc) in PRESETS.items():
        print(f"{name}\n  spec: {spec}\n  {desc}\n")
    return 0


def cmd_simulate(args) -> int:
    scenario = _scenario_from_args(args)
    t0 = time.perf_counter()
    trace = simulate(scenario)
    dt = time.perf_counter() - t0
    print_trace(trace, every=args.every, show_steps=not args.quiet)
    print(f"engine time: {dt:.3f} s for {len(trace.steps)} steps")
    if args.out:
        trace.save(args.out)
        print(f"trace saved to {args.out}")
    return 0


def cmd_show(args) -> int:
    trace = Trace.load(args.path)
    print_trace(trace, every=args.every, show_steps=not args.quiet)
    return 0


def bench_engine(num_steps: int, num_reqs: int, churn: bool, repeat: int, out=None) -> dict:
    """Time the engine on num_steps x num_reqs live requests; returns the figures."""
    if churn:
        # One arrival per step; each request lives ~num_reqs*2.5 steps, so max_num_seqs stays full.
        life = int(num_reqs * 2.5)
        spec = f"{num_steps + num_reqs}p128o{life}a0+1_seqs={num_reqs}_mml=16k_steps={num_steps}"
    else:
        spec = f"{num_reqs}p128o{num_steps + 8}_seqs={num_reqs}_mml=32k_tokens=64k_steps={num_steps}"
    scenario = parse_spec(spec)
    times = []
    trace = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        trace = simulate(scenario)
        times.append(time.perf_counter() - t0)
    best = min(times)
    rows = len(trace.arrays["row_inst"])
    res = {"spec": spec, "steps": len(trace.steps), "rows": rows, "seconds": best,
           "steps_per_s": len(trace.steps) / best, "rows_per_s": rows / best, "trace_mib": trace.nbytes() / 2**20}
    (out or sys.stdout).write(f"engine {'churn' if churn else 'steady'}: {spec}\n"
              f"  {res['steps']} steps, {rows:,} request-rows, best of {repeat}: {best:.2f} s  "
              f"({res['steps_per_s']:,.0f} steps/s, {res['rows_per_s'] / 1e6:.2f} M request-rows/s), "
              f"trace in memory {res['trace_mib']:.1f} MiB\n")
    return res


def cmd_bench(args) -> int:
    if args.what != "engine":
        raise ValueError(f"unknown benchmark {args.what!r} (known: engine)")
    print(f"python -m lab bench engine --steps {args.steps} --reqs {args.reqs}  (CPU, numpy engine; "
          f"target: 10,000 steps x 256 requests in <= 2 s)")
    small = bench_engine(args.steps // 4, args.reqs, False, args.repeat)
    full = bench_engine(args.steps, args.reqs, False, args.repeat)
    print(f"  linearity: {full['rows']}/{small['rows']} = {full['rows'] / small['rows']:.2f}x the rows took "
          f"{full['seconds'] / small['seconds']:.2f}x the time")
    if not args.no_churn:
        bench_engine(args.steps, args.reqs, True, args.repeat)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab", description="The max_seq_len lab (vLLM MRV2 attention metadata).")
    sub = p.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("presets", help="list the presets")
    sp.set_defaults(fn=cmd_presets)
    sp = sub.add_parser("simulate", help="run a scenario through the engine")
    sp.add_argument("--preset", help=f"one of: {', '.join(PRESETS)}")
    sp.add_argument("--spec", help="a scenario in the grammar (see lab/scenario.py), e.g. 8p1ko64_k=3")
    sp.add_argument("--out", help="save the trace as JSON here")
    sp.add_argument("--every", type=int, default=1, help="print every Nth step")
    sp.add_argument("--quiet", action="store_true", help="print only the totals")
    sp.set_defaults(fn=cmd_simulate)
    sp = sub.add_parser("show", help="print a saved trace")
    sp.add_argument("path")
    sp.add_argument("--every", type=int, default=1)
    sp.add_argument("--quiet", action="store_true")
    sp.set_defaults(fn=cmd_show)
    sp = sub.add_parser("bench", help="benchmarks")
    sp.add_argument("what", choices=["engine"])
    sp.add_argument("--steps", type=int, default=10_000)
    sp.add_argument("--reqs", type=int, default=256)
    sp.add_argument("--repeat", type=int, default=3)
    sp.add_argument("--no-churn", action="store_true", help="skip the run with one arrival per step")
    sp.set_defaults(fn=cmd_bench)
    sp = sub.add_parser("conform", help="compare the engine with vLLM 0.33.0's own MRV2 code (needs .venv-vllm)")
    sp.add_argument("--preset", help=f"one of: {', '.join(PRESETS)}")
    sp.add_argument("--spec", help="a scenario in the grammar")
    sp.add_argument("--random", metavar="A:B", help="the seeded random scenarios A..B-1 of the conformance suite")
    sp.add_argument("--all", action="store_true", help="the whole conformance suite: every preset + the random set")
    sp.add_argument("--no-kernels", action="store_true", help="skip R6/R7 (vLLM's Triton kernels, interpreted)")
    sp.set_defaults(fn=cmd_conform)
    return p


def cmd_conform(args) -> int:
    from lab.conform import cli  # vLLM itself is imported there, only when this command runs

    return cli(args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "every", 1) < 1:
        print("error: --every must be >= 1", file=sys.stderr)
        return 2
    try:
        return args.fn(args)
    except (ValueError, TraceFormatError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. --out in a folder that does not exist
        print(f"error: {e.strerror or e}: {e.filename or ''}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
