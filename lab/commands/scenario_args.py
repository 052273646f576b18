"""The scenario arguments of the command line, declared once for every command that takes a scenario
(simulate, record, conform, sweep, gpu-model): ``--preset``/``--spec`` and, where the command saves a
trace, ``--out``; and ``scenario_from_args``, the one place they become a ``Scenario``. Beside them the
kernel-run arguments of every command that times kernels (``add_kernel_run_args``).

Bad input is a ``ValueError`` with one clear sentence; lab/commands/main.py's ``main`` prints it as
``error: …`` on one line and exits with 2.
"""

from __future__ import annotations

import argparse

from lab.presets import PRESETS
from lab.scenario import Scenario, get_preset, parse_spec

PRESET_HELP = f"one of: {', '.join(PRESETS)}"
SPEC_HELP = "a scenario in the grammar"
OUT_HELP = "save the trace as JSON here"


def add_scenario_args(
    parser: argparse.ArgumentParser,
    *,
    out: bool = True,
    exclusive: bool = False,
    required: bool = False,
    preset_help: str = PRESET_HELP,
    spec_help: str = SPEC_HELP,
):
    """Declare ``--preset`` and ``--spec`` on ``parser``, then ``--out`` (the trace's JSON file) with
    ``out=True``.

    ``exclusive``: the two go in a mutually exclusive group (``required``: one of them must be given),
    so argparse refuses both; otherwise ``scenario_from_args`` does. Returns where they were added
    (the group, or ``parser``), so a command can add another source of its input beside them."""
    where = parser.add_mutually_exclusive_group(required=required) if exclusive else parser
    where.add_argument("--preset", help=preset_help)
    where.add_argument("--spec", help=spec_help)
    if out:
        parser.add_argument("--out", help=OUT_HELP)
    return where


def scenario_from_args(args: argparse.Namespace, default_preset: str | None = None) -> Scenario:
    """The scenario of ``--preset NAME`` or ``--spec TEXT``; ``default_preset`` when neither is given
    (else an error). An unknown preset or a bad spec raises ``ValueError`` saying what is wrong."""
    if args.preset and args.spec:
        raise ValueError("give --preset or --spec, not both")
    if args.preset:
        return get_preset(args.preset)
    if args.spec:
        return parse_spec(args.spec)
    if default_preset:
        return get_preset(default_preset)
    raise ValueError("give --preset NAME or --spec TEXT (python -m lab presets lists the presets)")


def add_kernel_run_args(parser: argparse.ArgumentParser, *, when: str, repeats: bool = True, threads: bool = True):
    """``--device``, ``--repeats`` and ``--threads`` of every command that times attention kernels (``simulate
    --backend``, ``sweep --kernels``, ``bench kernels``), declared once. ``when``: the flag or command they
    apply with, said in each help; ``bench`` has a ``--repeat`` of its own (``repeats=False``), ``sweep`` no
    threads of its own (``threads=False``: each point's process keeps torch's)."""
    parser.add_argument("--device", default="cpu", help=f"cpu or cuda ({when})")
    if repeats:
        parser.add_argument("--repeats", type=int, default=3, help=f"timed launches per mode and step ({when})")
    if threads:
        parser.add_argument("--threads", type=int, default=1, help=f"torch CPU threads ({when}; default 1)")
