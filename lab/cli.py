"""Command line: ``python -m lab …``.

python -m lab presets                         list the presets and what each shows
python -m lab simulate --preset NAME          run a preset, print each step and the totals
python -m lab simulate --spec "8p1ko64_k=3"   run a scenario written in the grammar
       [--out trace.json] [--every N] [--quiet]
       [--backend torch-reference [--device cpu] [--repeats N] [--threads N] [--steps 0,10,20]]
                                              … and run the kernels each Nth step (lab.run),
                                              printing per-step timings in both modes
python -m lab show trace.json                 print a saved trace the same way
python -m lab bench engine [--steps N] [--reqs N]
                                              time the engine, steps per second
python -m lab bench app                       the app: step-change server time, launch time
python -m lab bench kernels [--backend B] [--device D] [--shape 64x4k/32k/16 …] [--repeats N]
       [--threads N] [--json F] [--md F]       baseline vs fixed kernel time over batch shapes
python -m lab backends                        which attention backends run here (R10)
python -m lab conform --preset NAME           the engine against vLLM 0.33.0's MRV2 code, per rule
       [--spec TEXT | --random A:B | --all]   (run with .venv-vllm/bin/python; docs/fidelity.md)
python -m lab record --preset NAME            real vLLM 0.32 (Model Runner V2) on this CPU, both modes
       [--spec TEXT] [--out t.json] [--compare] [--as-is] [--no-timing]
                                              (run with .venv-vllm-live/bin/python; docs/live.md)
python -m lab compare A.json [B.json]         per step and field agreement of two traces (B: the
                                              embedded engine on A's scenario when left out)
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

from lab.engine.oor import OOR_CLASSES
from lab.presets import PRESETS
from lab.scenario import Scenario, get_preset, parse_spec
from lab.trace import Trace, TraceFormatError
from lab.trace.recorder import simulate


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
    w(
        f"  max_model_len={s.max_model_len} block_size={s.block_size} model_state={s.model_state} "
        f"K={s.num_speculative_tokens} cudagraph_mode={s.cudagraph_mode} "
        f"capture sizes up to {max(trace.meta['cudagraph_capture_sizes'] or [0])}\n"
    )
    w(
        f"  {len(trace.steps)} steps, {len(s.requests)} requests, {trace.meta.get('num_preemptions', 0)} preemptions, "
        f"block-table width {trace.width}; source: {trace.meta.get('source', '?')}\n\n"
    )
    if show_steps:
        w(
            f"{'step':>5} {'reqs':>4} {'pad':>4} {'tokens':>6} {'graph':<9} "
            f"{'max_seq_len b/f':>17} {'kernel sees b/f':>17} {'out-of-range b/f':>19}\n"
        )
        for st in trace.steps:
            if st.index % every and st.index != len(trace.steps) - 1:
                continue
            msl, kms, oor = st.max_seq_len, st.kernel_max_seq_len, st.oor_all_passes
            w(
                f"{st.index:>5} {st.num_reqs:>4} {st.num_reqs_padded:>4} {st.num_tokens:>6} {st.cudagraph_mode:<9} "
                f"{msl['baseline']:>8}/{msl['fixed']:<8} {kms['baseline']:>8}/{kms['fixed']:<8} "
                f"{_fmt(_oor_total(oor['baseline'])):>9}/{_fmt(_oor_total(oor['fixed'])):<9}\n"
            )
            if st.drafts and st.index % every == 0:
                d = st.drafts[-1]
                w(
                    f"{'':>5} drafts: {len(st.drafts)} passes, last {d.cudagraph_mode}, draft_max_seq_len "
                    f"{d.max_seq_len['baseline']}/{d.max_seq_len['fixed']}, kernel sees "
                    f"{d.kernel_max_seq_len['baseline']}/{d.kernel_max_seq_len['fixed']}\n"
                )
        w("\n")
    print_totals(trace, out)


def print_totals(trace: Trace, out=None) -> None:
    w = (out or sys.stdout).write
    passes = (
        (("target passes", False), ("all passes (target + drafts)", True))
        if trace.num_speculative_tokens
        else (("all steps", True),)
    )
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
    w(
        f"FULL-graph steps: {n_full} of {len(steps)}; there the kernel sees the captured max_model_len in both "
        f"modes (R9).\n"
    )


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


def _set_threads(n: int) -> None:
    import torch

    if n < 1:
        raise ValueError("--threads must be >= 1")
    torch.set_num_threads(n)


def print_timings(trace: Trace, every: int = 1, out=None, show_steps: bool = True) -> None:
    """The kernel timings of a live run: per timed step and in total."""
    w = (out or sys.stdout).write
    k = trace.timings
    w(
        f"kernels: backend {k['backend']} on {k['device']} ({k.get('head_config', k['dtype'])}); torch "
        f"{k.get('torch', '?')}, triton {k.get('triton', '?')}; median of {k.get('repeats', '?')} interleaved "
        f"launches per mode\n  reproduce: {k.get('command', '?')}\n"
    )
    rows = [st for st in trace.steps if st.timing is not None]
    if show_steps:
        w(
            f"{'step':>5} {'ms b/f':>19} {'ratio':>7} {'walked MB b/f':>19} {'GB/s b/f':>13} "
            f"{'max err b/f':>19} {'trusting wrong b/f':>18} {'out-of-range b/f':>19}\n"
        )
        for st in rows:
            if st.index % every and st.index != len(trace.steps) - 1:
                continue
            t, oor = st.timing, st.oor
            b, f = t["baseline"], t["fixed"]
            w(
                f"{st.index:>5} {b['ms']:>9.2f}/{f['ms']:<9.2f} {b['ms'] / f['ms']:>6.2f}x "
                f"{b['bytes_walked'] / 1e6:>9.1f}/{f['bytes_walked'] / 1e6:<9.1f} "
                f"{b['gbps_walked']:>6.2f}/{f['gbps_walked']:<6.2f} {b['max_abs_err']:>9.1e}/{f['max_abs_err']:<9.1e} "
                f"{b['trusting_wrong']:>8}/{f['trusting_wrong']:<9} "
                f"{_fmt(_oor_total(oor['baseline'])):>9}/{_fmt(_oor_total(oor['fixed'])):<9}\n"
            )
    if not rows:
        w("no step was timed\n")
        return
    tot = {m: sum(st.timing[m]["ms"] for st in rows) for m in ("baseline", "fixed")}
    walked = {m: sum(st.timing[m]["bytes_walked"] for st in rows) for m in ("baseline", "fixed")}
    wrong = {m: sum(st.timing[m]["trusting_wrong"] == 1 for st in rows) for m in ("baseline", "fixed")}
    with_oor = {m: sum(_oor_total(st.oor[m]) > 0 for st in rows) for m in ("baseline", "fixed")}
    w(
        f"kernel totals over {len(rows)} timed steps: baseline {tot['baseline']:.1f} ms, fixed {tot['fixed']:.1f} ms "
        f"({tot['baseline'] / tot['fixed']:.2f}x; walked bytes predict "
        f"{walked['baseline'] / max(walked['fixed'], 1):.2f}x)\n"
        f"  trusting kernel wrong on {wrong['baseline']}/{wrong['fixed']} steps (baseline/fixed); steps with "
        f"out-of-range reads: {with_oor['baseline']}/{with_oor['fixed']}\n"
    )


def cmd_simulate(args) -> int:
    scenario = _scenario_from_args(args)
    t0 = time.perf_counter()
    if args.backend:
        from lab.kernels.timed_run import run, text_progress

        _set_threads(args.threads)
        trace = run(
            scenario,
            backend=args.backend,
            device=args.device,
            every=args.every,
            progress=None if args.quiet else text_progress(),
            repeats=args.repeats,
            command=_live_command(args),
            steps=_parse_steps(args.steps),
        )
    else:
        trace = simulate(scenario)
    dt = time.perf_counter() - t0
    print_trace(trace, every=args.every, show_steps=not args.quiet)
    if args.backend:
        print()
        print_timings(trace, every=args.every, show_steps=not args.quiet)
    print(f"{'engine + kernel' if args.backend else 'engine'} time: {dt:.3f} s for {len(trace.steps)} steps")
    if args.out:
        trace.save(args.out)
        print(f"trace saved to {args.out}")
    return 0


def _parse_steps(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"--steps must be step indices separated by commas, e.g. 0,10,20; got {text!r}") from None


def _live_command(args) -> str:
    import shlex

    src = f"--preset {args.preset}" if args.preset else f"--spec {shlex.quote(args.spec)}"
    which = f"--steps {args.steps}" if args.steps else f"--every {args.every}"
    return (
        f"python -m lab simulate {src} --backend {args.backend} --device {args.device} {which} "
        f"--repeats {args.repeats} --threads {args.threads}"
    )


def cmd_show(args) -> int:
    trace = Trace.load(args.path)
    print_trace(trace, every=args.every, show_steps=not args.quiet)
    if trace.timings is not None:
        print()
        print_timings(trace, every=args.every, show_steps=not args.quiet)
    return 0


def cmd_backends(args) -> int:
    from lab.kernels.registry import backends

    for b in backends():
        runs = "runs here" if b["runs_here"] else f"not here: {b['why_not']}"
        r10 = (
            "max_seq_len changes its work" if b["max_seq_len_changes_work"] else "max_seq_len does not change its work"
        )
        print(f"{b['name']} ({b['device']}): {runs}\n  {b['kernel']}\n  R10: {r10}: {b['r10_reason']}")
    return 0


def cmd_bench_kernels(args) -> int:
    from lab.kernels.bench import DEFAULT_SHAPES, parse_shape, run_bench

    _set_threads(args.threads)
    shapes = [parse_shape(x) for x in args.shape] if args.shape else DEFAULT_SHAPES
    print(
        f"python -m lab bench kernels --backend {args.backend} --device {args.device} --repeats {args.repeat} "
        f"--threads {args.threads}  (benchmarks on a shared machine are noisy: read the IQR)"
    )
    from lab.kernels.batch import HeadConfig

    run_bench(
        shapes,
        args.backend,
        args.device,
        cfg=HeadConfig(dtype=args.dtype),
        repeats=args.repeat,
        json_path=args.json,
        md_path=args.md,
    )
    return 0


def bench_engine_spec(num_steps: int, num_reqs: int, churn: bool) -> str:
    """The benchmark's scenario: num_reqs requests decoding steadily, or under churn."""
    if churn:
        # One arrival per step; each request lives ~num_reqs*2.5 steps, so max_num_seqs stays full.
        life = int(num_reqs * 2.5)
        return f"{num_steps + num_reqs}p128o{life}a0+1_seqs={num_reqs}_mml=16k_steps={num_steps}"
    return f"{num_reqs}p128o{num_steps + 8}_seqs={num_reqs}_mml=32k_tokens=64k_steps={num_steps}"


def bench_engine_interleaved(num_steps: int, num_reqs: int, chunk: int = 100) -> dict:
    """The churn and the steady engine stepped in turn, ``chunk`` steps each, every chunk timed
    (trace building included): both see the same machine, so their ratio holds where a shared
    machine's speed drifts from one run to the next. Returns the seconds of each and the ratio."""
    import gc

    from lab.engine.model_runner import engine_steps
    from lab.trace.recorder import Recorder

    runs = {}
    for kind in ("steady", "churn"):
        scenario = parse_spec(bench_engine_spec(num_steps, num_reqs, kind == "churn"))
        runs[kind] = {"steps": engine_steps(scenario, [Recorder(scenario)]), "seconds": 0.0, "done": False}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while not all(r["done"] for r in runs.values()):
            for r in runs.values():
                t0 = time.perf_counter()
                try:
                    for _ in range(chunk):
                        next(r["steps"])
                except StopIteration:
                    r["done"] = True
                r["seconds"] += time.perf_counter() - t0
    finally:
        if gc_was_enabled:
            gc.enable()
    steady, churn = runs["steady"]["seconds"], runs["churn"]["seconds"]
    return {"steady_seconds": steady, "churn_seconds": churn, "ratio": churn / steady, "chunk": chunk}


def bench_engine(num_steps: int, num_reqs: int, churn: bool, repeat: int, out=None) -> dict:
    """Time the engine on num_steps x num_reqs live requests; returns the figures."""
    spec = bench_engine_spec(num_steps, num_reqs, churn)
    scenario = parse_spec(spec)
    times = []
    trace = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        trace = simulate(scenario)
        times.append(time.perf_counter() - t0)
    best = min(times)
    rows = len(trace.arrays["row_inst"])
    res = {
        "spec": spec,
        "steps": len(trace.steps),
        "rows": rows,
        "seconds": best,
        "steps_per_s": len(trace.steps) / best,
        "rows_per_s": rows / best,
        "trace_mib": trace.nbytes() / 2**20,
    }
    (out or sys.stdout).write(
        f"engine {'churn' if churn else 'steady'}: {spec}\n"
        f"  {res['steps']} steps, {rows:,} request-rows, best of {repeat}: {best:.2f} s  "
        f"({res['steps_per_s']:,.0f} steps/s, {res['rows_per_s'] / 1e6:.2f} M request-rows/s), "
        f"trace in memory {res['trace_mib']:.1f} MiB\n"
    )
    return res


def cmd_bench(args) -> int:
    if args.what == "app":
        from lab.app.bench import run_bench_app

        run_bench_app()
        return 0
    if args.what == "kernels":
        return cmd_bench_kernels(args)
    if args.what != "engine":
        raise ValueError(f"unknown benchmark {args.what!r} (known: engine, kernels, app)")
    print(
        f"python -m lab bench engine --steps {args.steps} --reqs {args.reqs}  (CPU, numpy engine; "
        f"target: 10,000 steps x 256 requests in <= 2 s)"
    )
    small = bench_engine(args.steps // 4, args.reqs, False, args.repeat)
    full = bench_engine(args.steps, args.reqs, False, args.repeat)
    print(
        f"  linearity: {full['rows']}/{small['rows']} = {full['rows'] / small['rows']:.2f}x the rows took "
        f"{full['seconds'] / small['seconds']:.2f}x the time"
    )
    if not args.no_churn:
        churn = bench_engine(args.steps, args.reqs, True, args.repeat)
        print(
            f"  churn/steady, separate runs: {churn['seconds'] / full['seconds']:.2f}x the steady run's time "
            f"({churn['rows'] / full['rows']:.2f}x its rows; each run sees the machine of its moment)"
        )
        ratios = [bench_engine_interleaved(args.steps, args.reqs) for _ in range(args.repeat)]
        best = sorted(ratios, key=lambda r: r["ratio"])[len(ratios) // 2]  # the median run
        print(
            f"  churn/steady: {best['ratio']:.2f}x, stepped in turn (median run; {best['chunk']} steps each; churn "
            f"{best['churn_seconds']:.2f} s, steady {best['steady_seconds']:.2f} s"
            + ("; runs: " + ", ".join(f"{r['ratio']:.2f}x" for r in ratios) if len(ratios) > 1 else "")
            + "; target <= 1.5x)"
        )
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
    sp.add_argument(
        "--backend",
        help="also run this attention backend each --every steps in both modes "
        "(python -m lab backends lists them), e.g. torch-reference",
    )
    sp.add_argument("--device", default="cpu", help="cpu or cuda (with --backend)")
    sp.add_argument("--repeats", type=int, default=3, help="timed launches per mode and step (with --backend)")
    sp.add_argument("--threads", type=int, default=1, help="torch CPU threads (with --backend; default 1)")
    sp.add_argument("--steps", help="time these steps instead of every --every-th, e.g. 0,10,20 (with --backend)")
    sp.set_defaults(fn=cmd_simulate)
    sp = sub.add_parser("show", help="print a saved trace")
    sp.add_argument("path")
    sp.add_argument("--every", type=int, default=1)
    sp.add_argument("--quiet", action="store_true")
    sp.set_defaults(fn=cmd_show)
    sp = sub.add_parser("backends", help="which attention backends run here, and R10 for each")
    sp.set_defaults(fn=cmd_backends)
    sp = sub.add_parser("bench", help="benchmarks")
    sp.add_argument("what", choices=["engine", "kernels", "app"])
    sp.add_argument("--steps", type=int, default=10_000)
    sp.add_argument("--reqs", type=int, default=256)
    sp.add_argument("--repeat", "--repeats", dest="repeat", type=int, default=3)
    sp.add_argument("--no-churn", action="store_true", help="skip the run with one arrival per step")
    sp.add_argument("--backend", default="torch-reference", help="kernels: the attention backend")
    sp.add_argument("--device", default="cpu", help="kernels: cpu or cuda")
    sp.add_argument(
        "--shape",
        action="append",
        help="kernels: BATCHxCONTEXT[s]/MAX_MODEL_LEN/BLOCK_SIZE, "
        "s = skewed lengths (repeatable; default: four shapes)",
    )
    sp.add_argument("--threads", type=int, default=1, help="kernels: torch CPU threads (default 1)")
    sp.add_argument(
        "--dtype",
        default="float32",
        help="kernels: float32 | bfloat16 | float16 (FlashInfer kernels need a 16-bit type)",
    )
    sp.add_argument("--json", help="kernels: write the results as JSON here")
    sp.add_argument("--md", help="kernels: write the table as markdown here")
    sp.set_defaults(fn=cmd_bench)
    sp = sub.add_parser("conform", help="compare the engine with vLLM 0.33.0's own MRV2 code (needs .venv-vllm)")
    sp.add_argument("--preset", help=f"one of: {', '.join(PRESETS)}")
    sp.add_argument("--spec", help="a scenario in the grammar")
    sp.add_argument("--random", metavar="A:B", help="the seeded random scenarios A..B-1 of the conformance suite")
    sp.add_argument("--all", action="store_true", help="the whole conformance suite: every preset + the random set")
    sp.add_argument("--no-kernels", action="store_true", help="skip R6/R7 (vLLM's Triton kernels, interpreted)")
    sp.set_defaults(fn=cmd_conform)
    # Live vLLM (lab/live, docs/live.md)
    sp = sub.add_parser("record", help="record real vLLM 0.32 MRV2 on this CPU (needs .venv-vllm-live)")
    sp.add_argument("--preset", help=f"one of: {', '.join(PRESETS)}")
    sp.add_argument("--spec", help="a scenario in the grammar")
    sp.add_argument("--out", help="save the trace as JSON here")
    sp.add_argument("--compare", action="store_true", help="compare with the embedded engine, field by field")
    sp.add_argument(
        "--as-is",
        action="store_true",
        help="refuse what the CPU engine can't run instead of "
        "recording the closest scenario it can (lab.live.cpu_variant)",
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
    from lab.sweep.cli import register as register_sweep  # `sweep` and `gpu-model` (docs/sweeps.md)

    register_sweep(sub)
    return p


def cmd_record(args) -> int:
    from lab.live.cli import cmd_record as record  # vLLM itself is imported there, in the live environment

    return record(args, _scenario_from_args(args), print_trace)


def cmd_compare(args) -> int:
    from lab.live.cli import cmd_compare as compare

    return compare(args)


def cmd_eras(args) -> int:
    from lab.live import eras

    root = pathlib.Path(args.root) if args.root else eras.ERA_DIR
    if args.action == "record":  # in an era environment (make eras)
        eras.record_presets(args.preset, root, log=lambda m: print(m, file=sys.stderr, flush=True))
        return 0
    recordings = eras.load_recordings(root)
    if args.action == "list":
        for (_series, preset), t in sorted(recordings.items()):
            rec = t.meta["recording"]
            print(f"{rec['vllm']:<17} torch {rec['torch']:<14} {rec['era']:<14} {preset:<26} {len(t.steps):>4} steps")
        return 0
    if not recordings:
        print(f"error: no recordings under {root} (make eras records them)", file=sys.stderr)
        return 2
    comparisons = {key: eras.compare_recording(t) for key, t in recordings.items()}
    print(eras.era_table(comparisons))
    return 0 if all(c.agree for c in comparisons.values()) else 1


def cmd_conform(args) -> int:
    from lab.conform import cli  # vLLM itself is imported there, only when this command runs

    return cli(args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "every", 1) < 1:
        print("error: --every must be >= 1", file=sys.stderr)
        return 2
    try:
        rc = args.fn(args)
        sys.stdout.flush()  # inside the try: a reader that left makes this raise BrokenPipeError
        return rc
    except (ValueError, TraceFormatError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader left (`… | head`): a subclass of OSError, so caught first. Point stdout at
        # devnull so the interpreter's last flush does not raise again, and exit quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:  # e.g. --out in a folder that does not exist
        print(f"error: {e.strerror or e}: {e.filename or ''}", file=sys.stderr)
        return 2
