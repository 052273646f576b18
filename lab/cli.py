"""Command line: ``python -m lab …``. This module builds the parser, has each package register its own
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

Where each command lives (its parser, its command and its printing):
    presets, simulate, show          lab/trace/cli.py      backends            lab/kernels/cli.py
    simulate --backend …             lab/kernels/cli.py
    export                           lab/export/cli.py
    bench engine|kernels|app         lab/bench.py          conform             lab/conform/cli.py
    record, compare, eras            lab/live/cli.py       sweep, gpu-model    lab/sweep/cli.py
    deployment                       lab/deployment/cli.py cheatsheet          lab/cheatsheet.py
    --preset/--spec/--out of every scenario-taking command: lab/cli_args.py
"""

from __future__ import annotations

import argparse
import os
import sys

import lab.conform.cli
import lab.deployment.cli
import lab.export.cli
import lab.kernels.cli
import lab.live.cli
import lab.sweep.cli
import lab.trace.cli
import lab.vllm_kernels.cli
from lab import bench, cheatsheet
from lab.trace import TraceFormatError

# In the order of `python -m lab --help`.
COMMAND_MODULES = (
    lab.trace.cli,
    lab.export.cli,
    lab.kernels.cli,
    lab.vllm_kernels.cli,
    bench,
    lab.conform.cli,
    lab.live.cli,
    lab.sweep.cli,
    lab.deployment.cli,
    cheatsheet,
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab", description="The max_seq_len lab (vLLM MRV2 attention metadata).")
    sub = p.add_subparsers(dest="cmd", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    return p


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
