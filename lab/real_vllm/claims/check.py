"""Check a claim about vLLM's code against the installed wheel: the source of the named symbol, read by
AST from the installed file (no vLLM import: a backend whose CUDA extension is missing is read all the
same), must contain the claim's quote, whitespace collapsed; a negative claim's symbol must never read the name it
quotes (``reads_of``: no load, no keyword of that name); a call claim's arguments must be handed to every call of
its callee (``check_call``: tied to that call, not to a keyword of the same text beside it).
tests/conformance/test_claims_vllm.py runs every claim of lab/gpu_model/ (backend records and rules) through
``check``."""

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


def calls_in(tree: ast.AST, callee: str) -> list[ast.Call]:
    """The calls in ``tree`` whose callee is ``callee``: the callee as written ("obj.f"), or for a bare name
    ("f") a call of that exact name or attribute (``trtllm_batch_decode_with_kv_cache`` is not
    ``trtllm_batch_decode_with_kv_cache_mla``)."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            written = ast.unparse(n.func)
            if written == callee or ("." not in callee and written.rsplit(".", 1)[-1] == callee):
                out.append(n)
    return out


def _receives(call: ast.Call, wanted: ast.Call) -> bool:
    """Whether ``call`` is handed ``wanted``'s arguments: its first positionals, and each keyword with the same
    expression (compared as AST, unparsed)."""
    given = [ast.unparse(a) for a in call.args]
    if given[: len(wanted.args)] != [ast.unparse(a) for a in wanted.args]:
        return False
    keywords = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
    return all(keywords.get(k.arg) == ast.unparse(k.value) for k in wanted.keywords)


def check_call(claim, source: str) -> None:
    """Raise ClaimFailed unless every call to ``claim.call`` in ``source`` receives the arguments ``claim.quote``
    lists (and there is at least one such call)."""
    try:
        wanted = ast.parse(f"_({claim.quote})", mode="eval").body
    except SyntaxError as e:
        raise ClaimFailed(f"call claim on {claim.symbol!r}: {claim.quote!r} is not an argument list") from e
    if not (wanted.args or wanted.keywords):
        raise ClaimFailed(f"call claim on {claim.symbol!r}: no argument to check (a call name alone is not a claim)")
    calls = calls_in(ast.parse(textwrap.dedent(source)), claim.call)
    if not calls:
        raise ClaimFailed(f"{claim.symbol}: no call to {claim.call} (the lab says: {claim.says})")
    missing = [c.lineno for c in calls if not _receives(c, wanted)]
    if missing:
        raise ClaimFailed(
            f"{claim.symbol}: the call to {claim.call} (line {missing} of it) is not handed {claim.quote!r} "
            f"(the lab says: {claim.says})"
        )


def check(claim, source: str | None = None) -> None:
    """Raise ClaimFailed unless ``claim.quote`` is in the source of ``claim.symbol`` (a negative claim,
    ``claim.absent``: unless that symbol never reads the name ``claim.quote``, by AST; a call claim,
    ``claim.call``: unless every call to it there receives the quoted arguments). ``source`` replaces the
    symbol's installed source (the tests hand it an edited copy)."""
    if not claim.quote.strip():
        raise ClaimFailed(f"claim on {claim.symbol!r} has no quote to check")
    text = source_of(claim.symbol) if source is None else source
    if getattr(claim, "call", ""):
        check_call(claim, text)
        return
    if getattr(claim, "absent", False):
        if not claim.quote.isidentifier():
            raise ClaimFailed(f"negative claim on {claim.symbol!r}: {claim.quote!r} is not a name")
        lines = reads_of(text, claim.quote)
        if lines:
            raise ClaimFailed(f"{claim.symbol}: reads {claim.quote} (lines {lines} of it); the lab says: {claim.says}")
        return
    if _collapse(claim.quote) not in _collapse(text):
        raise ClaimFailed(f"{claim.symbol}: quote not found: {claim.quote!r} (the lab says: {claim.says})")
