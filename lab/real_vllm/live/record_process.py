"""The app's "live vLLM" runner: ``python -m lab record`` in the live environment, as a subprocess.

The app's own environment keeps gradio, and vLLM 0.32/0.33 cannot share one with it (pillow), so the
recorder runs in ``.venv-vllm-live`` (or ``$LAB_LIVE_PYTHON``) and hands back a trace file, which is
loaded with every schema check like an upload. Progress comes from the recorder's step lines, the run
has a time limit, and any failure becomes one clear error (``LiveRunError``).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

from lab import vllm_env
from lab.trace import Trace

REPO = vllm_env.REPO
DEFAULT_TIMEOUT_S = 300
_STEP = re.compile(r"(baseline|fixed) run, step (\d+)")


class LiveRunError(RuntimeError):
    pass


def live_python() -> pathlib.Path:
    """The live environment's interpreter (lab/vllm_env.py live_python)."""
    return vllm_env.live_python()


def status() -> tuple[bool, str]:
    """(True, "") when the live environment exists, else (False, why). Starts nothing."""
    py = live_python()
    if not py.exists():
        return False, (
            f"the live environment is missing ({_shown(py)}); `make venv-vllm-live` builds it (about 3 GB, "
            f"~5 min; docs/live.md)"
        )
    return True, ""


def _shown(py: pathlib.Path) -> str:
    """The interpreter as a room's attendees may read it: relative to the checkout, never the server's paths."""
    try:
        return str(py.resolve().relative_to(REPO.resolve()))
    except ValueError:
        return "the interpreter LAB_LIVE_PYTHON names"


def record_in_subprocess(scenario, progress=None, timeout_s: float = DEFAULT_TIMEOUT_S):
    """Record ``scenario`` (adapted with lab.real_vllm.live.cpu_variant) in the live environment; return its Trace.
    ``progress(steps_done, run)`` is called as the recorder reports steps (``run``: "baseline", then
    "fixed": it runs the scenario once per mode)."""
    ok, why = status()
    if not ok:
        raise LiveRunError(why)
    with tempfile.TemporaryDirectory(prefix="lab-live-app-") as tmp:
        out = pathlib.Path(tmp) / "trace.json"
        cmd = [str(live_python()), "-m", "lab", "record", "--spec", scenario.to_spec(), "--out", str(out), "--quiet"]
        env = vllm_env.with_checkout_on_path(dict(os.environ))
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        t0 = time.monotonic()
        tail: list[str] = []
        try:
            for line in proc.stderr:
                tail = (tail + [line.rstrip()])[-20:]
                m = _STEP.search(line)
                if m and progress is not None:
                    progress(int(m.group(2)), m.group(1))
                if time.monotonic() - t0 > timeout_s:
                    raise subprocess.TimeoutExpired(cmd, timeout_s)
            proc.wait(timeout=max(1.0, timeout_s - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise LiveRunError(
                f"the live vLLM recording took longer than {timeout_s:.0f} s and was stopped; try a "
                f"scenario with fewer steps"
            ) from None
        if proc.returncode != 0 or not out.exists():
            first = next((i for i, ln in enumerate(tail) if ln.startswith("error:")), None)
            detail = (
                " ".join(ln.strip() for ln in tail[first:])
                if first is not None
                else next((ln for ln in reversed(tail) if "Error" in ln), tail[-1] if tail else "(no output)")
            )
            raise LiveRunError(f"the live vLLM recorder failed (exit {proc.returncode}): {detail}")
        trace = Trace.load(out)
    # The recording is of the scenario's CPU variant: it keeps the scenario's name (a preset's committed
    # recordings and the app's preset box find it by name) and says what ran.
    ran = trace.scenario.to_spec()
    trace.scenario = trace.scenario.replace(
        name=scenario.name, description=f"the CPU variant that {trace.meta.get('source', 'vLLM')} ran: {ran}"
    )
    return trace


if __name__ == "__main__":  # a manual check: python -m lab.real_vllm.live.record_process SPEC
    from lab.scenario import parse_spec

    trace = record_in_subprocess(parse_spec(sys.argv[1]), progress=lambda n, run: print(run, "step", n))
    print(len(trace.steps), trace.meta["source"])
