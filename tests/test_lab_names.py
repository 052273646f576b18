"""Every lab class, function and attribute that docs/architecture.md, docs/rules.md and the lab's own
docstrings name exists, read from the lab's source with ``ast`` (no import, no vLLM): a renamed
method or a class that was never the lab's (``speculator.py`` ``EagleSpeculator.propose``: vLLM has
an EagleSpeculator, the lab's engine does not) fails here instead of sending a reader to nothing.
tests/conformance/test_vllm_names.py does the same for vLLM's files and symbols.

A reference is one of:

- a lab path followed by symbols, each in backticks: ``engine/speculator.py`` ``draft_step_upper_bound``,
  ``TargetDependentARSpeculator.propose`` (markdown: single backticks; docstrings: double). A path is
  ``lab/...py`` or starts at a lab package (``engine/…``); a docstring of a package's ``__init__`` may
  name its own files bare (``model_runner.py``), as lab/engine/__init__.py's reading order does;
- in docs/architecture.md's rule table and lab/engine/__init__.py's rule list, an engine module and
  its symbol, dotted (``speculator.TargetDependentARSpeculator.propose``, ``model_states.*.prepare_attn``).

A symbol ``A.b`` needs a class ``A`` in the file with an attribute ``b`` (a method, a class-level name,
or ``self.b`` set in a method; its bases in the lab count); a bare ``f`` needs a top-level name or a
method of one of the file's classes; ``f(x=)`` also needs the parameter ``x``."""

from __future__ import annotations

import ast
import functools
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAB = ROOT / "lab"
PACKAGES = sorted(p.parent.name for p in LAB.glob("*/__init__.py"))
DOCS = ("docs/architecture.md", "docs/rules.md")
_NAME = r"[A-Za-z_*][A-Za-z0-9_*]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\([^)`]*\))?"
# A lab path not inside another path (vllm/v1/engine/… is vLLM's), then its backticked symbols.
_PATH = rf"(?<![\w/.])((?:lab/)?(?:{'|'.join(PACKAGES)})/[\w/]+\.py|lab/\w+\.py)"
_BARE = r"(?<![\w/.])(\w+\.py)"


def _symbols_after(text: str, start: int, tick: str) -> list[str]:
    """The backticked symbols right after ``start``: ``sym``, ``sym``/ ``sym`` + … (not another path)."""
    sym = re.compile(rf"\s*(?:,|/|\+|and)?\s*{re.escape(tick)}({_NAME}){re.escape(tick)}")
    out = []
    while (m := sym.match(text, start)) and not m.group(1).endswith(".py"):
        out.append(m.group(1))
        start = m.end()
    return out


def path_references(text: str, tick: str, own_package: pathlib.Path | None = None) -> list[tuple[str, str]]:
    """(lab file, symbol) for each path-then-symbols reference in ``text``."""
    out = []
    patterns = [(re.compile(rf"(?:{tick})?{_PATH}(?:{tick})?"), None)]
    if own_package is not None:
        patterns.append((re.compile(rf"(?:{tick})?{_BARE}(?:{tick})?"), own_package))
    for pattern, package in patterns:
        for m in pattern.finditer(text):
            path = m.group(1)
            file = package / path if package else LAB / path.removeprefix("lab/")
            if package and not file.is_file():
                continue  # a bare name not in this package: vLLM's (test_vllm_names.py checks those)
            out += [(str(file.relative_to(ROOT)), s) for s in _symbols_after(text, m.end(), tick)]
    return out


def dotted_references(text: str) -> list[tuple[str, str]]:
    """(lab/engine file, symbol) for each ``module.symbol`` whose first part is an engine module."""
    engine = {p.stem for p in (LAB / "engine").glob("*.py")}
    out = []
    for m in re.finditer(rf"(?<![\w/.`])`?(\w+)\.({_NAME})`?", text):
        module, symbol = m.groups()
        if module in engine and symbol != "py":
            out.append((f"lab/engine/{module}.py", symbol))
    return out


def _rule_rows(text: str, first: str) -> str:
    """The lines of a rule table (architecture.md) or rule list (engine/__init__.py) that start with ``first``."""
    return "\n".join(line for line in text.splitlines() if re.match(first, line))


def _docstrings(path: pathlib.Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if doc := ast.get_docstring(node, clean=False):
                yield doc


def references() -> list[tuple[str, str, str]]:
    """(where, lab file, symbol) for every lab symbol the two docs and the lab's docstrings name."""
    out = []
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        out += [(doc, f, s) for f, s in path_references(text, "`")]
        if doc.endswith("architecture.md"):
            out += [(doc, f, s) for f, s in dotted_references(_rule_rows(text, r"\| (R\d|out-of-range|the schedule)"))]
    for path in sorted(LAB.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        own = path.parent if path.name == "__init__.py" else None
        for doc in _docstrings(path):
            out += [(where, f, s) for f, s in path_references(doc, "``", own)]
            if where == "lab/engine/__init__.py":
                out += [(where, f, s) for f, s in dotted_references(_rule_rows(doc, r"\s+R\d+\s"))]
    return out


# ---- resolving a symbol in the lab's source ------------------------------------------------------


@functools.cache
def _tree(file: str) -> ast.Module:
    return ast.parse((ROOT / file).read_text(), file)


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return names


def _class_members(cls: ast.ClassDef, file: str, seen: frozenset = frozenset()) -> dict[str, ast.AST]:
    """A class's attributes: its body's names, ``self.x`` set in its methods, and its bases' in the lab."""
    members: dict[str, ast.AST] = {}
    for base in cls.bases:  # a base defined in the same file (the lab's hierarchies are)
        parent = _top_level(_tree(file)).get(getattr(base, "id", ""))
        if isinstance(parent, ast.ClassDef) and parent.name not in seen:
            members.update(_class_members(parent, file, seen | {cls.name}))
    members.update(_top_level(ast.Module(body=cls.body, type_ignores=[])))
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for t in targets:
            if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self":
                members.setdefault(t.attr, node)
    return members


def _params(node: ast.AST) -> set[str]:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    a = node.args
    return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}


def missing(file: str, symbol: str) -> str | None:
    """Why ``symbol`` is not in the lab file ``file`` (None when it is)."""
    if not (ROOT / file).is_file():
        return "no such file"
    name, _, call = symbol.partition("(")
    keywords = re.findall(r"(\w+)=", call)
    top = _top_level(_tree(file))
    classes = [n for n in top.values() if isinstance(n, ast.ClassDef)]
    head, _, attr = name.partition(".")
    if head == "*":  # model_states.*.prepare_attn: some class of the file has it
        found = [_class_members(c, file).get(attr) for c in classes]
    elif attr:
        cls = top.get(head)
        if not isinstance(cls, ast.ClassDef):
            return f"no class {head}"
        found = [_class_members(cls, file).get(attr.split(".")[0])]
    else:
        found = [top.get(name)] + [_class_members(c, file).get(name) for c in classes]
    found = [f for f in found if f is not None]
    if not found:
        return f"no {name}"
    if keywords and not any(set(keywords) <= _params(f) for f in found):
        return f"{name} takes no {', '.join(keywords)}"
    return None


def unresolved(refs) -> list[str]:
    return [f"{where}: {file} {symbol}: {why}" for where, file, symbol in refs if (why := missing(file, symbol))]


def test_every_named_lab_symbol_exists():
    refs = references()
    assert len(refs) > 40  # the extractor still finds the references
    assert {w for w, _, _ in refs} >= {*DOCS, "lab/engine/__init__.py"}
    bad = unresolved(refs)
    assert not bad, "named but not in the lab:\n" + "\n".join(bad)


def test_a_wrong_lab_name_is_caught():
    """The check can fail: the reference lab/engine/__init__.py used to make, a misspelt method, a
    keyword the function does not take, and a file that moved."""
    text = "``speculator.py`` ``EagleSpeculator.propose``"
    refs = [("x", f, s) for f, s in path_references(text, "``", LAB / "engine")]
    refs += [("x", f, s) for f, s in dotted_references("`block_table.BlockTables.gather_block_table`")]
    refs += [("x", f, s) for f, s in path_references("`engine/plain.py` `gather_block_tables(colour=)`", "`")]
    refs += [("x", "lab/kernels/split_plan.py", "split_plan")]
    assert [r[2] for r in refs] == [
        "EagleSpeculator.propose",
        "BlockTables.gather_block_table",
        "gather_block_tables(colour=)",
        "split_plan",
    ]
    assert len(unresolved(refs)) == 4
    assert not unresolved([("x", "lab/engine/speculator.py", "TargetDependentARSpeculator.propose")])
