"""The shape of lab/: no import cycle, data flowing one way, no module over 450 lines.

Every ``import``, at module level or inside a function, is an edge (only ``if TYPE_CHECKING:``
blocks, which never run, are left out). docs/architecture.md draws the layers."""

from __future__ import annotations

import ast
import pathlib

LAB = pathlib.Path(__file__).resolve().parent.parent / "lab"


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(LAB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in LAB.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and getattr(block.test, "id", None) == "TYPE_CHECKING"
            for n in ast.walk(block)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: climb node.level - 1 packages up from this one
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                # `from lab.x import y` names module lab.x.y when that is a module, else lab.x.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for t in targets:
                if t in modules and t != mod:
                    graph[mod].add(t)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle (as a path) or None, by depth-first search."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n) :] + [n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert "lab.trace.recorder" in graph["lab"]  # lab/__init__.py: simulate
    assert "lab.kernels.timed_run" in graph["lab.kernels.cli"]  # imported inside cmd_simulate only
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle_in_lab():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


MAX_MODULE_LINES = 450

# Which way data flows (scenario -> engine -> kernels -> trace -> views -> app / notebooks / CLI):
# a module in the first package may import nothing under the second.
FORBIDDEN = [
    ("lab.blocks", "lab."),  # block arithmetic: below everything
    ("lab.presets", "lab."),
    ("lab.engine", "lab.trace"),  # the engine hands StepRecords to observers; it never builds a trace
    ("lab.engine", "lab.views"),
    ("lab.engine", "lab.kernels"),
    ("lab.engine", "lab.live"),
    ("lab.engine", "lab.app"),
    ("lab.trace", "lab.views"),
    ("lab.trace", "lab.app"),
    ("lab.views", "lab.live"),  # the committed era recordings live in lab.trace.era_recordings
    ("lab.views", "lab.app"),
    ("lab.views", "lab.kernels"),
]
# What lab/scenario.py (and the grammar beside it) may import: nothing above it.
SCENARIO_MAY_IMPORT = {"lab.presets", "lab.blocks", "lab.scenario", "lab.spec_grammar"}


def _under(module: str, package: str) -> bool:
    return module == package.rstrip(".") or module.startswith(package if package.endswith(".") else package + ".")


def test_data_flows_one_way():
    graph = import_graph()
    wrong = [
        f"{mod} imports {dep}"
        for mod, deps in graph.items()
        for dep in sorted(deps)
        for low, high in FORBIDDEN
        if _under(mod, low) and _under(dep, high)
    ]
    for mod in ("lab.scenario", "lab.spec_grammar"):
        wrong += [f"{mod} imports {dep}" for dep in sorted(graph.get(mod, ())) if dep not in SCENARIO_MAY_IMPORT]
    assert not wrong, "imports against the data flow:\n" + "\n".join(wrong)


def test_the_arrow_check_can_fail():
    assert _under("lab.engine.model_runner", "lab.engine") and not _under("lab.engineering", "lab.engine")
    assert _under("lab.trace", "lab.trace") and _under("lab.kernels.batch", "lab.")


def test_no_module_over_450_lines():
    long = {
        str(p.relative_to(LAB.parent)): n
        for p in LAB.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by job): {long}"
