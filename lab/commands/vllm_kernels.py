"""``python -m lab bench vllm-kernels``: its flags (on the shared ``bench`` parser, lab/commands/bench/__init__.py; it
shares ``--shape``, ``--json``, ``--device`` and ``--repeat`` with ``bench kernels``) and its command.
``--device cuda`` runs the compiled kernels on a GPU whose environment has vLLM (scripts/gpu_check.sh):
grids and scratch are recorded there, loads only in the interpreter. Run from ``.venv`` it hands
itself to ``.venv-vllm`` (lab/real_vllm/kernels/env.py); importing this module imports neither torch nor
vLLM.
"""

from __future__ import annotations

import os


def add_bench_args(sp) -> None:
    sp.add_argument(
        "--kernel",
        action="append",
        choices=["mla", "unified", "flex"],
        help="vllm-kernels: mla | unified | flex (default all)",
    )
    sp.add_argument("--sm", action="append", type=int, help="vllm-kernels: SM count (default 132 and 148)")
    sp.add_argument("--preset", action="append", help="vllm-kernels: a preset whose trace steps to run (repeatable)")
    sp.add_argument("--step", action="append", type=int, help="vllm-kernels: a step of --preset (repeatable)")
    sp.add_argument("--max-steps", type=int, default=3, help="vllm-kernels: steps per preset without --step")
    sp.add_argument(
        "--config", choices=["deepseek", "small"], default="deepseek", help="vllm-kernels: MLA shape (default deepseek)"
    )


def argv_of(args) -> list[str]:
    """The command line of these arguments, for the run in .venv-vllm."""
    argv = ["bench", "vllm-kernels", "--config", args.config, "--max-steps", str(args.max_steps)]
    for flag, values in (
        ("--shape", args.shape),
        ("--kernel", args.kernel),
        ("--sm", args.sm),
        ("--preset", args.preset),
        ("--step", args.step),
    ):
        for v in values or []:
            argv += [flag, str(v)]
    if args.json:
        argv += ["--json", os.path.abspath(args.json)]  # the run's working directory is the checkout
    if args.device != "cpu":
        argv += ["--device", args.device, "--repeat", str(args.repeat)]
    return argv


def cmd_bench_vllm_kernels(args) -> int:
    from lab.real_vllm.kernels import env

    if not env.in_vllm_env():
        print(f"vLLM {env.VLLM_VERSION} is not installed here: running in {env.vllm_python()}")
        return env.run_in_vllm_env(argv_of(args), args.device)
    from lab.commands.bench import vllm_kernels as bench  # imports torch and vLLM
    from lab.real_vllm.kernels import run

    sources = [run.batch_from_shape(s) for s in args.shape or ([] if args.preset else bench.DEFAULT_SHAPES)]
    for p in args.preset or []:
        sources += run.step_batches(p, args.step, args.max_steps)
    bench.run_bench(
        sources,
        kernels=tuple(args.kernel or run.KERNELS),
        sms=tuple(args.sm or run.SMS),
        config=args.config,
        json_path=args.json,
    )
    return 0


def register(sub) -> None:
    """``python -m lab vllm-kernels count``: vLLM's own kernel on a trace's steps, counted, into the trace."""
    from lab.commands.scenario_args import add_scenario_args

    sp = sub.add_parser("vllm-kernels", help="vLLM 0.33.0's own attention kernel on a trace's steps, counted")
    sp.add_argument("action", choices=["count"], help="count: run it on every --every-th step, attach the counts")
    where = add_scenario_args(sp, exclusive=True)
    where.add_argument("--trace", help="a trace JSON file to count on (instead of --preset / --spec)")
    sp.add_argument("--kernel", choices=["mla", "unified"], default="mla", help="mla (default) | unified")
    sp.add_argument("--sm", type=int, default=132, help="SM count for Triton MLA's split count (132: H100/H200)")
    sp.add_argument("--every", type=int, default=10, help="every N-th step (default 10; the interpreter is slow)")
    sp.add_argument("--config", choices=["deepseek", "small"], default="small", help="MLA shape (default small)")
    sp.set_defaults(fn=cmd_vllm_kernels_count)


def cmd_vllm_kernels_count(args) -> int:
    from lab.real_vllm.kernels import env

    if not args.out:
        raise ValueError("give --out FILE.json: the trace with the counts")
    if not env.in_vllm_env():
        argv = ["vllm-kernels", "count", "--kernel", args.kernel, "--sm", str(args.sm), "--every", str(args.every)]
        argv += ["--config", args.config, "--out", os.path.abspath(args.out)]
        for flag, value in (("--preset", args.preset), ("--spec", args.spec)):
            argv += [flag, value] if value else []
        if args.trace:
            argv += ["--trace", os.path.abspath(args.trace)]
        print(f"vLLM {env.VLLM_VERSION} is not installed here: running in {env.vllm_python()}")
        return env.run_in_vllm_env(argv)
    import lab
    from lab.commands.scenario_args import scenario_from_args
    from lab.real_vllm.kernels.trace_counts import count_trace  # imports torch and vLLM

    trace = lab.Trace.load(args.trace) if args.trace else lab.simulate(scenario_from_args(args))
    meta, arrays = count_trace(trace, args.kernel, args.sm, args.every, args.config, log=print)
    trace.attach_vllm_counts(meta, arrays)
    trace.save(args.out)
    print(f"wrote {args.out}: {meta['kernel']} counted on {meta['steps_run']} steps ({meta['device']})")
    return 0
