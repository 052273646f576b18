"""``python -m lab.real_vllm.patch`` in ``.venv-vllm``: the side of ``python -m lab patch`` that runs vLLM.

    python -m lab.real_vllm.patch locate                       # where the installed vllm package is
    python -m lab.real_vllm.patch run --spec SPEC --out F.json [--overlay DIR --path P ... --added JSON]
    python -m lab.real_vllm.patch pytest [--overlay DIR --path P ...] -- TEST_FILE [pytest args]

``run`` writes the harness's values (lab/real_vllm/patch/harness.py) as JSON, or ``{"error": …}`` with
vLLM's traceback when the patched code raised (exit 3); ``pytest`` runs a test file with the overlay
installed first (the test itself imports only vLLM).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path


def _overlay(args) -> Path | None:
    if not args.overlay:
        return None
    from lab.real_vllm.patch.overlay import install

    overlay = Path(args.overlay)
    install(overlay, args.path)
    return overlay


def _run(args) -> int:
    from lab.real_vllm.patch import harness
    from lab.real_vllm.patch.overlay import LineProof, user_traceback
    from lab.scenario import parse_spec

    overlay = _overlay(args)
    scenario = parse_spec(args.spec)
    added = json.loads(args.added) if args.added else {}
    t0 = time.perf_counter()
    proof = LineProof(overlay, added) if overlay else None
    try:
        if proof:
            with proof:
                out = harness.run(scenario, kernels=args.kernels)
        else:
            out = harness.run(scenario, kernels=args.kernels)
    except Exception as e:  # the patched code's own failure is the user's error; anything else is the lab's
        shown = user_traceback(e, overlay) if overlay else None
        if shown is None:
            raise
        Path(args.out).write_text(json.dumps({"error": shown}))
        return 3
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["proof"] = proof.report() if proof else {}
    Path(args.out).write_text(json.dumps(out))
    return 0


def _pytest(args) -> int:
    os.environ["TRITON_INTERPRET"] = "1"  # vLLM's Triton kernels on CPU tensors (lab/vllm_env.py)
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    _overlay(args)
    import pytest

    return int(pytest.main(["-q", "-p", "no:cacheprovider", *args.rest]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.real_vllm.patch")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("locate")
    for name in ("run", "pytest"):
        sp = sub.add_parser(name)
        sp.add_argument("--overlay")
        sp.add_argument("--path", action="append", default=[])
        if name == "run":
            sp.add_argument("--spec", required=True)
            sp.add_argument("--out", required=True)
            sp.add_argument("--added")
            sp.add_argument("--kernels", action="store_true")
        else:
            sp.add_argument("rest", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.cmd == "locate":
        spec = importlib.util.find_spec("vllm")  # finds the package without importing it
        print(Path(spec.origin).parent if spec and spec.origin else "")
        return 0 if spec else 2
    if args.cmd == "pytest":
        args.rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
        return _pytest(args)
    return _run(args)


if __name__ == "__main__":
    sys.exit(main())
