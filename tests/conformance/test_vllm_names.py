"""Every vLLM file and symbol the lab names, in docs/, the notebooks and the engine's rule comments,
exists in the installed vLLM 0.33.0 wheel: a renamed function or a file that moved (as
``FlashAttentionBackend.get_kv_cache_shape`` did) fails here instead of misleading a reader. Runs in
``.venv-vllm`` (skipped elsewhere, required under ``make test``).

A reference is a ``*.py`` path followed by a symbol (``model_runner.py`` ``prepare_inputs``,
``vllm/config/vllm.py`` ``VllmConfig._set_cudagraph_sizes``). Paths are looked up in vLLM as written,
under ``vllm/``, and under the directories the docs abbreviate (``vllm/v1/worker/gpu/``, the attention
backends and ops); a path that is not vLLM's is the lab's own (checked the same way) or another
project's (FlashInfer, FlashAttention: named as such)."""

from __future__ import annotations

import json
import os
import pathlib
import re

import pytest

if os.environ.get("LAB_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 lives in .venv-vllm (make test runs this suite there)")

ROOT = pathlib.Path(__file__).resolve().parents[2]
VLLM_ABBREVIATED = (
    "",
    "v1/",
    "v1/worker/gpu/",
    "v1/attention/backends/",
    "v1/attention/backends/mla/",
    "v1/attention/ops/",
)
LAB_ABBREVIATED = ("", "lab/", "lab/engine/")
OTHER_PROJECTS = ("flashinfer/", "hopper/", "csrc/", "include/")
REF = re.compile(
    r"`?((?:[a-z_0-9]+/)*[a-z_0-9]+\.py)`?,?\s+``?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)``?"
)


def _vllm_root() -> pathlib.Path:
    import vllm

    return pathlib.Path(vllm.__file__).parent


def _pages():
    for p in sorted((ROOT / "docs").glob("*.md")):
        yield p, p.read_text()
    for p in sorted((ROOT / "notebooks").glob("*.ipynb")):
        yield p, "\n".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"])
    for p in sorted((ROOT / "lab" / "engine").glob("*.py")):
        yield p, p.read_text()


def references() -> list[tuple[str, str, str]]:
    """(page, path, symbol) for every file-and-symbol reference."""
    out = []
    for page, text in _pages():
        for m in REF.finditer(text):
            path, symbol = m.group(1), m.group(2)
            if symbol.endswith(".py") or symbol == "py":
                continue  # two files named one after the other
            out.append((str(page.relative_to(ROOT)), path, symbol))
    return out


def _has(text: str, symbol: str) -> bool:
    return all(re.search(rf"\b{re.escape(part)}\b", text) for part in symbol.split("."))


def _find(bases, path) -> list[pathlib.Path]:
    return [b / path for b in bases if (b / path).is_file()]


def unresolved(refs) -> tuple[list[str], int]:
    """The references found neither in vLLM 0.33.0 nor in the lab, and how many were vLLM's."""
    vroot = _vllm_root()
    vbases = [vroot.parent] + [vroot / d for d in VLLM_ABBREVIATED]
    lbases = [ROOT / d for d in LAB_ABBREVIATED]
    missing, in_vllm = [], 0
    for page, path, symbol in refs:
        vfiles = _find(vbases, path.removeprefix("vllm/"))
        if not vfiles and "/" not in path:  # a bare file name: wherever it is in vLLM, if only once
            found = [f for f in vroot.rglob(path) if f.is_file()]
            vfiles = found if len(found) == 1 else []
        if any(_has(f.read_text(), symbol) for f in vfiles):
            in_vllm += 1
            continue
        lfiles = [] if path.startswith("vllm/") else _find(lbases, path)
        if any(_has(f.read_text(), symbol) for f in lfiles) or path.startswith(OTHER_PROJECTS):
            continue  # the lab's own file, or another project's
        missing.append(f"{page}: {path} {symbol}")
    return missing, in_vllm


def test_every_named_vllm_file_and_symbol_exists():
    refs = references()
    assert len(refs) > 60  # the extractor still finds the references
    missing, in_vllm = unresolved(refs)
    assert not missing, "named but not in vLLM 0.33.0 (nor the lab):\n" + "\n".join(missing)
    assert in_vllm > 40


def test_a_stale_name_is_caught():
    """The check can fail: the reference docs/kernels.md used to make, and a misspelt function."""
    stale = [
        ("docs/kernels.md", "vllm/v1/attention/backends/flash_attn.py", "FlashAttentionBackend.get_kv_cache_shape"),
        ("notebooks/03", "spec_decode/speculator.py", "_build_draft_attn_metadata"),
    ]
    missing, _ = unresolved(stale)
    assert len(missing) == 2
