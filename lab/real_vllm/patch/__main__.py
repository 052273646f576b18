"""``python -m lab.real_vllm.patch`` in ``.venv-vllm``: the side of ``python -m lab patch`` that runs vLLM.

    python -m lab.real_vllm.patch locate                       # where the installed vllm package is
    python -m lab.real_vllm.patch run --spec SPEC --out F.json [--overlay DIR --path P ... --added JSON] [--pytest T]

``run`` writes the harness's values (lab/real_vllm/patch/harness.py) as JSON, or ``{"error": …}`` with
vLLM's traceback when the patched code raised (exit 3), and with ``--pytest`` the generated test's result
from the same process (the overlay installed first; the test itself imports only vLLM).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
import time
from pathlib import Path

from lab.scenario import parse_spec


def _overlay(args) -> Path | None:
    if not args.overlay:
        return None
    from lab.real_vllm.patch.overlay import install

    overlay = Path(args.overlay)
    install(overlay, args.path)
    return overlay


def _run(args) -> int:
    from lab.real_vllm.conform.vllm_mrv2 import load_vllm
    from lab.real_vllm.patch import harness
    from lab.real_vllm.patch.overlay import LineProof, user_traceback

    overlay = _overlay(args)
    proof = LineProof(overlay, json.loads(args.added or "{}")) if overlay else None
    t0 = time.perf_counter()
    try:
        # vLLM (and the patched modules it imports) first, untraced: see LineProof.imported.
        load_vllm()
        with proof or contextlib.nullcontext():
            out = harness.run(parse_spec(args.spec), kernels=args.kernels)
    except Exception as e:  # the patched code's own failure is the user's error; anything else is the lab's
        shown = user_traceback(e, overlay) if overlay else None
        if shown is None:
            raise
        Path(args.out).write_text(json.dumps({"error": shown}))
        return 3
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["proof"] = proof.report() if proof else {}
    if args.pytest:  # the generated test, in this process: the same overlay, vLLM imported once
        out["pytest"] = _pytest_here(args.pytest)
    Path(args.out).write_text(json.dumps(out))
    return 0


def _pytest_here(test_file: str) -> dict:
    import io

    import pytest

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", str(Path(test_file).parent), test_file])
    lines = [x for x in buf.getvalue().splitlines() if x.strip()]
    return {"passed": int(rc) == 0, "output": "\n".join(lines[-40:])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.real_vllm.patch")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("locate")
    sp = sub.add_parser("run")
    sp.add_argument("--overlay")
    sp.add_argument("--path", action="append", default=[])
    sp.add_argument("--spec", required=True)
    sp.add_argument("--out", required=True)
    sp.add_argument("--added")
    sp.add_argument("--kernels", action="store_true")
    sp.add_argument("--pytest", help="then run this test file here, with the same overlay")
    args = p.parse_args(argv)
    if args.cmd == "locate":
        spec = importlib.util.find_spec("vllm")  # finds the package without importing it
        print(Path(spec.origin).parent if spec and spec.origin else "")
        return 0 if spec else 2
    return _run(args)


if __name__ == "__main__":
    sys.exit(main())
