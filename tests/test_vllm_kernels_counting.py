"""lab/real_vllm/kernels/counting.py without vLLM: the interpreter's launches and loads counted on a tiny
Triton kernel whose loads are known (in a subprocess: TRITON_INTERPRET is read when triton is
imported), and the compiled-launch recorder (the GPU path) on a stand-in ``JITFunction.run``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

triton = pytest.importorskip("triton", reason="Triton is in the test extras (make test installs it)")

CODE = """
import numpy as np, torch, triton, triton.language as tl
from lab.real_vllm.kernels.counting import Counter

@triton.jit
def gather(Table, Out, n, W: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, W)
    x = tl.load(Table + row * W + cols, mask=cols < n, other=0)
    tl.store(Out + row * W + cols, x)

t = torch.arange(24, dtype=torch.int32).view(3, 8)
o = torch.zeros_like(t)
with Counter({"gather": ["Table"]}) as c:
    gather[(3,)](t, o, 5, W=8)
(l,) = c.launches
w = l.watched["Table"]
rows, cols = w.rows_cols()
assert l.kernel == "gather" and l.grid == (3, 1, 1) and l.programs == 3, l
assert w.lanes == 15 and w.masked_lanes == 9 and w.bytes_loaded == 60, (w.lanes, w.masked_lanes)
assert sorted(set(cols.tolist())) == [0, 1, 2, 3, 4] and sorted(set(rows.tolist())) == [0, 1, 2]
assert l.shapes["Table"] == (3, 8)
print("ok")
"""


def test_the_interpreter_counter_counts_a_known_kernel():
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", CODE], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_the_compiled_launch_recorder(monkeypatch):
    from triton.runtime.jit import JITFunction

    from lab.real_vllm.kernels.counting import Counter

    calls = []
    monkeypatch.setattr(JITFunction, "run", lambda fn, *a, grid, warmup, **k: calls.append(grid))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)

    class Fn:
        __name__ = "stage1"
        arg_names = ["X", "n"]

    import torch

    with Counter() as c:
        JITFunction.run(Fn(), torch.zeros(4, 2), 3, grid=(4, 2, 8), warmup=False)
    assert not c.counts_loads and calls == [(4, 2, 8)]
    (launch,) = c.launches
    assert launch.kernel == "stage1" and launch.grid == (4, 2, 8) and launch.programs == 64
    assert launch.shapes == {"X": (4, 2)}
    assert JITFunction.run is not None and len(calls) == 1
