"""``python -m lab backends`` and ``python -m lab bench kernels``: which attention backends run here,
and baseline against fixed kernel time over batch shapes; and ``simulate --backend``. lab/commands/main.py
registers ``backends`` (and ``simulate``'s kernel flags) with ``lab.commands.kernels.register(sub)``; the
``bench`` command (lab/commands/bench/__init__.py) takes its kernel flags from ``add_bench_args`` and runs
``cmd_bench_kernels``.

Importing this module does not import torch (``python -m lab --help`` stays fast): each command
imports the kernels when it runs.
"""

from __future__ import annotations

import shlex

from lab.commands.scenario_args import add_kernel_run_args


def register(sub) -> None:
    sp = sub.add_parser("backends", help="which attention backends run here, and R10 for each")
    sp.set_defaults(fn=cmd_backends)
    if "simulate" in sub.choices:  # lab/commands/trace.py registered it first (lab/commands/main.py command_modules)
        add_simulate_backend_args(sub.choices["simulate"])


def add_simulate_backend_args(sp) -> None:
    """``simulate --backend …``: the kernels timed each step. The flags and the timed run are this
    module's; lab/commands/trace.py runs the engine and prints."""
    sp.add_argument(
        "--backend",
        help="also run this attention backend each --every steps in both modes "
        "(python -m lab backends lists them), e.g. torch-reference",
    )
    add_kernel_run_args(sp, when="with --backend")
    sp.add_argument("--steps", help="time these steps instead of every --every-th, e.g. 0,10,20 (with --backend)")
    sp.set_defaults(fn=cmd_simulate)


def cmd_simulate(args) -> int:
    """``simulate``, with ``--backend``: the engine's run with the kernels timed (lab/kernels/timed_run.py)."""
    from lab.commands.trace import cmd_simulate as simulate_and_print

    if not args.backend:
        return simulate_and_print(args)

    def timed_run(scenario):
        from lab.kernels.timed_run import run, text_progress  # imports torch: only with --backend

        set_torch_threads(args.threads)
        return run(
            scenario,
            backend=args.backend,
            device=args.device,
            every=args.every,
            progress=None if args.quiet else text_progress(),
            repeats=args.repeats,
            command=_live_command(args),
            steps=_parse_steps(args.steps),
        )

    return simulate_and_print(args, timed_run)


def _parse_steps(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"--steps must be step indices separated by commas, e.g. 0,10,20; got {text!r}") from None


def _live_command(args) -> str:
    """The command that reproduces a run with --backend (kept in the trace's timings)."""
    src = f"--preset {args.preset}" if args.preset else f"--spec {shlex.quote(args.spec)}"
    which = f"--steps {args.steps}" if args.steps else f"--every {args.every}"
    return (
        f"python -m lab simulate {src} --backend {args.backend} --device {args.device} {which} "
        f"--repeats {args.repeats} --threads {args.threads}"
    )


def add_bench_args(sp) -> None:
    """The flags of ``python -m lab bench kernels`` (``--repeat`` is the bench command's, shared)."""
    sp.add_argument("--backend", default="torch-reference", help="kernels: the attention backend")
    add_kernel_run_args(sp, when="bench kernels", repeats=False)
    sp.add_argument(
        "--shape",
        action="append",
        help="kernels: BATCHxCONTEXT[s]/MAX_MODEL_LEN/BLOCK_SIZE, "
        "s = skewed lengths (repeatable; default: four shapes)",
    )
    sp.add_argument(
        "--dtype",
        default="float32",
        help="kernels: float32 | bfloat16 | float16 (FlashInfer kernels need a 16-bit type)",
    )
    sp.add_argument("--json", help="kernels: write the results as JSON here")
    sp.add_argument("--md", help="kernels: write the table as markdown here")


def set_torch_threads(n: int) -> None:
    """``--threads``: torch's CPU threads for the kernels (simulate --backend, bench kernels)."""
    import torch  # heavy: only the commands that run kernels import it

    if n < 1:
        raise ValueError("--threads must be >= 1")
    torch.set_num_threads(n)


def cmd_backends(args) -> int:
    from lab.gpu_model.backends import BACKENDS, backend_label
    from lab.kernels.registry import backends  # imports torch

    for b in backends():
        runs = "runs here" if b["runs_here"] else f"not here: {b['why_not']}"
        r10 = (
            "max_seq_len changes its work" if b["max_seq_len_changes_work"] else "max_seq_len does not change its work"
        )
        # the vLLM backend whose work the kernel does, named as the deployment tab and answer name it (review 5 m7)
        label = backend_label(b["r10_record"])
        of = f" [vLLM's {label}]" if label != b["r10_record"] else ""
        print(
            f"{b['name']} ({b['device']}){of}: {runs}\n  {b['kernel']}\n  "
            f"R10: {r10} ({b['r10_known']}): {b['r10_reason']}"
        )
    print("\nR10 per backend vLLM runs on a GPU (lab/gpu_model/backends.py; how each answer is known):")
    for r in BACKENDS:
        print(f"  {backend_label(r.name)}, {r.attention}: {r.verdict} [{r.known}]\n    {r.how}")
    print("vLLM's own Triton kernels, both modes, counted: python -m lab bench vllm-kernels (runs in .venv-vllm)")
    return 0


def cmd_bench_kernels(args) -> int:
    # both import torch
    from lab.commands.bench.kernels import run_bench
    from lab.kernels.batch import DEFAULT_SHAPES, HeadConfig, parse_shape

    set_torch_threads(args.threads)
    shapes = [parse_shape(x) for x in args.shape] if args.shape else DEFAULT_SHAPES
    print(
        f"python -m lab bench kernels --backend {args.backend} --device {args.device} --repeats {args.repeat} "
        f"--threads {args.threads}  (benchmarks on a shared machine are noisy: read the IQR)"
    )
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
