"""``python -m lab export``: one trace as one self-contained HTML file (lab/export).

python -m lab export --preset NAME | --spec TEXT | TRACE.json  --out NAME.html
python -m lab export --all DIR          every preset, DIR/<preset>.html (make export)
"""

from __future__ import annotations

import os
import time

from lab.commands.scenario_args import add_scenario_args, scenario_from_args
from lab.presets import PRESETS
from lab.scenario import get_preset
from lab.trace import Trace
from lab.trace.recorder import simulate


def register(sub) -> None:
    what = "one trace as one HTML file that needs no install (every view, every step, play)"
    sp = sub.add_parser(
        "export",
        help=what,
        description=what + ": open it offline in any browser, hand it out in a workshop.",
        usage="python -m lab export (--preset NAME | --spec SPEC | TRACE.json) --out FILE.html\n"
        "       python -m lab export --all DIR",
        epilog="Example: python -m lab export --preset eagle-k3 --out eagle-k3.html",
    )
    # Argument groups, because argparse lists every --option under "options" as if it were optional:
    # --out has no default and is required, except with --all (which argparse's required= cannot say).
    source = sp.add_argument_group("what to export (one of them)")
    source.add_argument("trace", nargs="?", metavar="TRACE.json", help="a saved trace")
    add_scenario_args(source, out=False)
    sp.add_argument_group("required (unless --all)").add_argument(
        "--out", metavar="FILE.html", help="the HTML file to write (no default)"
    )
    sp.add_argument_group("or instead").add_argument(
        "--all", metavar="DIR", help="write every preset as DIR/<preset>.html (no --out)"
    )
    sp.set_defaults(fn=cmd_export)


def _write(trace, out: str) -> None:
    from lab.export import export_html  # deferred: plotly

    t0 = time.perf_counter()
    size = export_html(trace, out)
    print(f"wrote {out}: {size / 1e6:.2f} MB, {len(trace.steps)} steps, in {time.perf_counter() - t0:.1f} s")


def cmd_export(args) -> int:
    if args.all:
        if args.trace or args.preset or args.spec or args.out:
            raise ValueError("--all DIR writes every preset: give no other source and no --out")
        os.makedirs(args.all, exist_ok=True)
        for name in PRESETS:
            _write(simulate(get_preset(name)), os.path.join(args.all, f"{name}.html"))
        return 0
    if args.trace and (args.preset or args.spec):
        raise ValueError("give a trace file, --preset or --spec: one of them")
    # What to export is checked first: `--preset nope` names the unknown preset, not the missing --out.
    scenario = None if args.trace else scenario_from_args(args)
    if not args.out:
        raise ValueError("--out FILE.html is required: the HTML file to write (or --all DIR for every preset)")
    trace = Trace.load(args.trace) if args.trace else simulate(scenario)
    _write(trace, args.out)
    return 0
