"""Check a claim about vLLM's code against the installed wheel: the source of the named symbol, read by
AST from the installed file (no vLLM import: a backend whose CUDA extension is missing is read all the
same), must contain the claim's quote, whitespace collapsed; a negative claim's symbol must never read the name it
quotes (``reads_of``: no load, no keyword of that name). tests/conformance/test_claims_vllm.py runs
every claim of lab/gpu_model/ (backend records and rules) through ``check``."""

from __future__ import annotations

import ast
import functools
import importlib.util
import pathlib
import re
import textwrap


class ClaimFailed(AssertionError):
    pass


def _vllm_root() -> pathlib.Path:
    spec = importlib.util.find_spec("vllm")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise ClaimFailed("vLLM is not installed here (the claims are checked in .venv-vllm)")
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@functools.lru_cache(maxsize=64)
def _parsed(path: pathlib.Path) -> tuple[str, ast.Module]:
    text = path.read_text()
    return text, ast.parse(text)


def source_of(symbol: str) -> str:
    """The source text of ``symbol`` ("vllm.a.b:Class.method", "vllm.a.b:function" or "vllm.a.b:" for the
    whole module) in the installed wheel."""
    module, _, qualname = symbol.partition(":")
    if not module.startswith("vllm."):
        raise ClaimFailed(f"claim symbol {symbol!r}: not a vLLM module")
    path = _vllm_root().joinpath(*module.split(".")[1:]).with_suffix(".py")
    if not path.is_file():
        raise ClaimFailed(f"claim symbol {symbol!r}: no file {path}")
    text, tree = _parsed(path)
    if not qualname:
        return text
    node: ast.AST = tree
    for part in qualname.split("."):
        found = [
            n
            for n in getattr(node, "body", [])
            if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and n.name == part
        ]
        if not found:
            raise ClaimFailed(f"claim symbol {symbol!r}: no {part!r} in {path.name}")
        node = found[-1]
    return ast.get_source_segment(text, node) or ""


def reads_of(source: str, name: str) -> list[int]:
    """The lines (of ``source``, a symbol's text) that read ``name``: a load of the bare name or of an attribute of
    that name, or a keyword argument of that name (``f(name=...)`` hands the value on). A parameter of that name
    is not a read; only its use in the body is."""
    tree = ast.parse(textwrap.dedent(source))
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Name | ast.Attribute) and isinstance(n.ctx, ast.Load):
            if (n.id if isinstance(n, ast.Name) else n.attr) == name:
                out.append(n.lineno)
        elif isinstance(n, ast.keyword) and n.arg == name:
            out.append(n.value.lineno)
    return sorted(set(out))


def check(claim) -> None:
    """Raise ClaimFailed unless ``claim.quote`` is in the source of ``claim.symbol`` (a negative claim,
    ``claim.absent``: unless that symbol never reads the name ``claim.quote``, by AST)."""
    if not claim.quote.strip():
        raise ClaimFailed(f"claim on {claim.symbol!r} has no quote to check")
    if getattr(claim, "absent", False):
        if not claim.quote.isidentifier():
            raise ClaimFailed(f"negative claim on {claim.symbol!r}: {claim.quote!r} is not a name")
        lines = reads_of(source_of(claim.symbol), claim.quote)
        if lines:
            raise ClaimFailed(f"{claim.symbol}: reads {claim.quote} (lines {lines} of it); the lab says: {claim.says}")
        return
    if _collapse(claim.quote) not in _collapse(source_of(claim.symbol)):
        raise ClaimFailed(f"{claim.symbol}: quote not found: {claim.quote!r} (the lab says: {claim.says})")
