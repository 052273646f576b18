"""The engine's output, pinned: every array of every preset's trace and of 60 seeded random
scenarios hashes to what the engine produced before a refactoring (tests/data/engine_golden.json).

A change that is meant to change the engine's output regenerates the file, and says why in its
commit: ``python tests/test_engine_golden.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import sys

import numpy as np
import pytest

from lab import simulate
from lab.presets import list_presets
from lab.real_vllm.conform import random_scenario
from lab.scenario import get_preset, parse_spec

GOLDEN = pathlib.Path(__file__).parent / "data" / "engine_golden.json"
NUM_RANDOM = 60


# Churn: one arrival per step, so batch rows shift and stale columns are rewritten and classified
# every step (the cases issue 14 made faster), with and without drafts and FULL graphs.
CHURN_SPECS = ("1064p128o100a0+1_seqs=40_mml=16k_steps=1000", "700p64o80a0+1_seqs=32_mml=4k_k=2_capture=1/8_steps=600")


def cases():
    return (
        [(f"preset {name}", lambda name=name: get_preset(name)) for name in list_presets()]
        + [(f"random {seed}", lambda seed=seed: random_scenario(seed)) for seed in range(NUM_RANDOM)]
        + [(f"churn {spec}", lambda spec=spec: parse_spec(spec)) for spec in CHURN_SPECS]
    )


def digest(trace) -> dict[str, str]:
    """sha256 (16 hex digits) of each array: dtype, shape and bytes."""
    out = {}
    for name in sorted(trace.arrays):
        a = np.ascontiguousarray(trace.arrays[name])
        out[name] = hashlib.sha256(a.dtype.str.encode() + str(a.shape).encode() + a.tobytes()).hexdigest()[:16]
    return out


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("label,make", cases(), ids=[c[0].replace(" ", "-") for c in cases()])
def test_trace_arrays_unchanged(label, make, golden):
    want = golden[label]
    got = digest(simulate(make()))
    assert sorted(got) == sorted(want), f"{label}: arrays {sorted(got)} vs golden {sorted(want)}"
    changed = [n for n in want if got[n] != want[n]]
    assert not changed, f"{label}: arrays changed against the golden engine: {changed}"


def test_golden_covers_every_case(golden):
    assert set(golden) == {label for label, _ in cases()}


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    GOLDEN.write_text(
        json.dumps({label: digest(simulate(make())) for label, make in cases()}, indent=0, sort_keys=True)
    )
    print(f"wrote {GOLDEN}")
