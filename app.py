"""The lab's entry point (`make demo`).

Until the Gradio app lands, this runs the command-line walkthrough of a preset on the embedded CPU
engine: every step's batch, max_seq_len (baseline/fixed), what the kernel sees, and the totals.

    python app.py [--preset NAME] [--every N]
"""

import argparse
import sys

from lab.cli import main
from lab.presets import PRESETS

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="short-decode-long-context", help=f"one of: {', '.join(PRESETS)}")
    p.add_argument("--every", type=int, default=10, help="print every Nth step")
    args = p.parse_args()
    sys.exit(main(["simulate", "--preset", args.preset, "--every", str(args.every)]))
