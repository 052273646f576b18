"""Command line: ``python -m lab …``. This module builds the parser, has each command module register its own
commands, and runs the one chosen (an error in the input: one line on stderr, exit code 2).

python -m lab presets                         list the presets and what each shows
python -m lab simulate --preset NAME          run a preset, print each step and the totals
python -m lab simulate --spec "8p1ko64_k=3"   run a scenario written in the grammar
       [--out trace.json] [--every N] [--quiet]
       [--backend torch-reference [--device cpu] [--repeats N] [--threads N] [--steps 0,10,20]]
                                              … and run the kernels each Nth step (lab.run),
                                              printing per-step timings in both modes
python -m lab show trace.json                 print a saved trace the same way
python -m lab export --preset NAME | --spec TEXT | TRACE.json --out NAME.html
       [--all DIR]                            one HTML file, every view and step, no install (lab/export)
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
python -m lab deployment -- vllm serve MODEL …  does the change matter for this deployment?
                                              (lab/deployment; docs/deployments.md)
python -m lab compare A.json [B.json]         per step and field agreement of two traces (B: the
                                              embedded engine on A's scenario when left out)
python -m lab cheatsheet --out FILE.html      one printable page: rules R1-R11, eras x paths (docs/rules.md)
python -m lab claims [--where TEXT]           every claim about vLLM's source, checked in .venv-vllm

Each command lives in one module of lab/commands/ (its parser, its command and its printing; the table in
lab/commands/__init__.py); ``command_modules()`` registers them, as vLLM's ``vllm/entrypoints/cli/main.py``
does its ``CMD_MODULES``. --preset/--spec/--out of every scenario-taking command: lab/commands/scenario_args.py.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from lab.trace import TraceFormatError


def command_modules() -> tuple:
    """Every command module, in the order of `python -m lab --help` (imported when a parser needs them all)."""
    from lab.commands import (
        bench,
        cheatsheet,
        claims,
        conform,
        deployment,
        export,
        kernels,
        live,
        patch,
        sweep,
        trace,
        vllm_kernels,
    )

    return (trace, export, kernels, vllm_kernels, bench, conform, claims, patch, live, sweep, deployment, cheatsheet)


# `python -m lab NAME …` where lab/commands/NAME.py registers NAME itself builds that module's parser alone: the
# deployment question answers a line without importing every other command (issue 47: a line in <= 1 s with
# imports). tests/test_cli.py checks each one's parser is the same as in the whole parser.
OWN_MODULE_COMMANDS = ("deployment", "export", "cheatsheet", "claims", "conform", "sweep", "patch", "bench")


def _parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    p = argparse.ArgumentParser(prog="python -m lab", description="The max_seq_len lab (vLLM MRV2 attention metadata).")
    return p, p.add_subparsers(dest="cmd", required=True)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; ``command`` (one of OWN_MODULE_COMMANDS): its own module's parser alone."""
    p, sub = _parser()
    if command in OWN_MODULE_COMMANDS:
        importlib.import_module(f"lab.commands.{command}").register(sub)
        return p
    for module in command_modules():
        module.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    first = argv[0] if argv else None
    args = build_parser(first if first in OWN_MODULE_COMMANDS else None).parse_args(argv)
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
