"""The shape of lab/: four rings (the library; real_vllm/, app/, commands/ around it), no import cycle between
modules or between packages, data flowing one way, no module over 450 lines.

Every ``import``, at module level or inside a function, is an edge (only ``if TYPE_CHECKING:``
blocks, which never run, are left out). docs/architecture.md draws the packages' layers from this
graph; ``python tests/test_imports.py --write`` redraws them there, ``test_architecture_picture_is_current``
fails when the drawing is stale."""

from __future__ import annotations

import ast
import pathlib
import re
import sys
import textwrap

LAB = pathlib.Path(__file__).resolve().parent.parent / "lab"
ARCHITECTURE = LAB.parent / "docs" / "architecture.md"


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
    assert "lab.kernels.timed_run" in graph["lab.commands.kernels"]  # imported inside cmd_simulate only
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle_in_lab():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


# ---- the graph of packages ---------------------------------------------------------------------


# The ring whose packages are drawn one by one: real_vllm/conform/, real_vllm/live/, … are each a node of the
# picture (each runs in its own interpreter), not one "real_vllm" node. commands/ is one node: its bench/ and its
# command modules share the argument helpers.
DRAWN_BY_PACKAGE = ("lab.real_vllm",)


def package_of(module: str, packages: set[str]) -> str:
    """The node a module counts in: its package under lab (``lab.engine`` for lab.engine.oor; under the rings of
    DRAWN_BY_PACKAGE, the package one level down: ``lab.real_vllm.live`` for lab.real_vllm.live.driver), or the
    module itself where it is a top-level one (``lab.scenario``, ``lab``)."""
    parts = module.split(".")
    if ".".join(parts[:2]) in DRAWN_BY_PACKAGE and ".".join(parts[:3]) in packages:
        return ".".join(parts[:3])
    return ".".join(parts[:2]) if len(parts) > 2 or module in packages else module


def lab_packages() -> set[str]:
    nested = [p for ring in DRAWN_BY_PACKAGE for p in (LAB.parent / ring.replace(".", "/")).glob("*/__init__.py")]
    return {module_name(p) for p in [*LAB.glob("*/__init__.py"), *nested]}


def package_graph(graph: dict[str, set[str]], packages: set[str]) -> dict[str, set[str]]:
    """``graph`` collapsed to packages: an edge A -> B when a module of A imports a module of B."""
    out: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        a = package_of(mod, packages)
        out.setdefault(a, set()).update(b for d in deps if (b := package_of(d, packages)) != a)
    for deps in list(out.values()):
        for b in deps:
            out.setdefault(b, set())
    return out


def test_no_import_cycle_between_packages():
    # Modules can be acyclic while their packages are not (lab.a.x -> lab.b.y -> lab.a.z): then no
    # package can be read, tested or moved without the other, so the packages must be acyclic too.
    cycle = find_cycle(package_graph(import_graph(), lab_packages()))
    assert cycle is None, "package import cycle: " + " -> ".join(cycle)


def test_the_package_cycle_check_can_fail():
    modules = {"lab.a.x": {"lab.b.y"}, "lab.b.y": {"lab.a.z"}, "lab.a.z": set(), "lab.c": {"lab.a.x"}}
    assert find_cycle(modules) is None
    packages = package_graph(modules, {"lab.a", "lab.b"})
    assert packages == {"lab.a": {"lab.b"}, "lab.b": {"lab.a"}, "lab.c": {"lab.a"}}
    assert find_cycle(packages) == ["lab.a", "lab.b", "lab.a"]
    assert package_of("lab.scenario", {"lab.engine"}) == "lab.scenario"
    assert package_of("lab.engine", {"lab.engine"}) == "lab.engine"


MAX_MODULE_LINES = 450

# Which way data flows (scenario -> engine -> kernels -> trace -> views -> app / notebooks / CLI):
# a module in the first package may import nothing under the second.
FORBIDDEN = [
    ("lab.blocks", "lab."),  # block arithmetic: below everything
    ("lab.presets", "lab."),
    ("lab.engine", "lab.trace"),  # the engine hands StepRecords to observers; it never builds a trace
    ("lab.engine", "lab.views"),
    ("lab.engine", "lab.kernels"),
    ("lab.engine", "lab.real_vllm.live"),
    ("lab.engine", "lab.app"),
    ("lab.trace", "lab.views"),
    ("lab.trace", "lab.app"),
    ("lab.views", "lab.real_vllm.live"),  # the committed era recordings live in lab.trace.era_recordings
    ("lab.views", "lab.app"),
    ("lab.views", "lab.kernels"),
    # The package cycles straightened in the issue "package arrows", so that they cannot come back:
    ("lab.gpu_model", "lab.kernels"),  # the kernels read the GPU model's records, never the other way
    ("lab.trace", "lab.kernels"),  # simulate --backend is lab/commands/kernels.py's
    ("lab.kernels", "lab.real_vllm.live"),  # vLLM's pre-import shim is lab/vllm_env.py's
    ("lab.deployment", "lab.app"),  # the deployment tab's bench is lab/commands/bench/deployment.py
    ("lab.export", "lab.app"),  # the browser flags are lab/commands/bench/browser.py's
    ("lab.vllm_env", "lab."),  # how vLLM is found and imported: below every package but the history
    ("lab.commands.bench.browser", "lab."),
    # The two tables every package reads (issue "One home for each fact"): the history below everything,
    # the speculator table reading only the history.
    ("lab.history", "lab."),
    ("lab.speculators", "lab."),
]
# The one way down each of those rules allows: both read vLLM's history.
ALLOWED = {("lab.vllm_env", "lab.history"), ("lab.speculators", "lab.history")}
# What lab/scenario.py (and the grammar beside it) may import: nothing above it.
SCENARIO_MAY_IMPORT = {
    "lab.presets",
    "lab.blocks",
    "lab.scenario",
    "lab.spec_grammar",
    "lab.history",
    "lab.speculators",
}


def _under(module: str, package: str) -> bool:
    return module == package.rstrip(".") or module.startswith(package if package.endswith(".") else package + ".")


def test_data_flows_one_way():
    graph = import_graph()
    wrong = [
        f"{mod} imports {dep}"
        for mod, deps in graph.items()
        for dep in sorted(deps)
        for low, high in FORBIDDEN
        if _under(mod, low) and _under(dep, high) and (mod, dep) not in ALLOWED
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


# ---- the picture in docs/architecture.md -------------------------------------------------------

BEGIN = "<!-- BEGIN packages: generated by `python tests/test_imports.py --write`; edit the imports, not this -->"
END = "<!-- END packages -->"


def layers(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each node's layer: 0 when it imports nothing in lab, else one above the highest layer it
    imports. Defined only for an acyclic graph, which the tests above keep."""
    done: dict[str, int] = {}

    def layer(n: str) -> int:
        if n not in done:
            done[n] = 1 + max((layer(d) for d in graph[n]), default=-1)
        return done[n]

    for n in graph:
        layer(n)
    return done


def _label(node: str, packages: set[str]) -> str:
    if node == "lab":
        return "lab/__init__.py"
    name = node.removeprefix("lab.").replace(".", "/")
    return f"{name}/" if node in packages else f"{name}.py"


def architecture_picture() -> str:
    """Every package (and top-level module) of lab/ by layer, with what it imports: the block between
    BEGIN and END in docs/architecture.md. New modules (a top-level lab/history.py, say) take their
    layer from their own imports, so rerunning ``--write`` is all a change of imports needs."""
    packages = lab_packages()
    graph = package_graph(import_graph(), packages)
    layer = layers(graph)
    width = max(len(_label(n, packages)) for n in graph) + 2
    lines = [f"{'layer':<7}{'package':<{width}}imports (each from a lower layer)"]
    for n in sorted(graph, key=lambda n: (layer[n], _label(n, packages))):
        deps = " ".join(sorted(_label(d, packages) for d in graph[n])) or "-"
        lead = f"{layer[n]:<7}{_label(n, packages):<{width}}"
        wrapped = textwrap.wrap(deps, 100 - len(lead), break_on_hyphens=False) or ["-"]
        lines.append(lead + wrapped[0])
        lines += [" " * len(lead) + w for w in wrapped[1:]]
    return "\n".join(lines)


def _doc_block(text: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip().removeprefix("```").removesuffix("```").strip("\n")


def test_architecture_picture_is_current():
    text = ARCHITECTURE.read_text()
    assert BEGIN in text and END in text, f"docs/architecture.md lost its {BEGIN!r} ... {END!r} block"
    assert _doc_block(text) == architecture_picture(), (
        "docs/architecture.md's package picture differs from the imports: run python tests/test_imports.py --write"
    )


def test_layers_put_every_import_below():
    assert layers({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == {"a": 2, "b": 1, "c": 0}
    graph = package_graph(import_graph(), lab_packages())
    layer = layers(graph)
    assert all(layer[d] < layer[n] for n, deps in graph.items() for d in deps)


def write_architecture_picture() -> None:
    text = ARCHITECTURE.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    ARCHITECTURE.write_text(text[:start] + "\n```\n" + architecture_picture() + "\n```\n" + text[end:])


if __name__ == "__main__":  # python tests/test_imports.py [--write]: print (or rewrite) the picture
    if sys.argv[1:] == ["--write"]:
        write_architecture_picture()
    else:
        print(architecture_picture())


MAX_FUNCTION_LINES = 100


def test_no_function_over_100_lines():
    """A function a person can read at once: split a longer one into named steps."""
    long = {
        f"{p.relative_to(LAB.parent)}:{n.lineno} {n.name}": n.end_lineno - n.lineno + 1
        for p in LAB.rglob("*.py")
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES
    }
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


# ---- the four rings (docs/architecture.md) ------------------------------------------------------
# The library (every module outside the three rings below) is what a learner reads: it imports no ring and
# neither Gradio nor vLLM. real_vllm/ runs in, or launches, a vLLM environment; app/ is the Gradio server;
# commands/ is every `python -m lab …` command and every bench. Arrows go inward only: commands -> app (its
# "live vLLM" runner) -> real_vllm -> library.
RINGS = ("lab.commands", "lab.app", "lab.real_vllm")
RING_MAY_IMPORT = {
    "lab.commands": set(RINGS),
    "lab.app": {"lab.app", "lab.real_vllm"},
    "lab.real_vllm": {"lab.real_vllm"},
}
ENTRY = "lab.__main__"  # `python -m lab`: runs lab.commands.main
# Where `import vllm` may stand below real_vllm/: the kernel registry lists vLLM's CPU attention op as a runnable
# kernel (lab/kernels/vllm_cpu_attn.py and its adapter).
VLLM_IMPORTERS_BELOW = {"lab.kernels.vllm_cpu_attn", "lab.kernels.adapters"}


def ring_of(module: str) -> str:
    return next((r for r in RINGS if _under(module, r)), "library")


def ring_violations(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for mod, deps in graph.items():
        ring = ring_of(mod)
        allowed = RING_MAY_IMPORT.get(ring, set()) if mod != ENTRY else {"lab.commands"}
        wrong += [
            f"{mod} ({ring}) imports {d} ({ring_of(d)})"
            for d in sorted(deps)
            if ring_of(d) not in allowed | {"library"}
        ]
    return wrong


def test_rings_point_inward():
    wrong = ring_violations(import_graph())
    assert not wrong, "imports across the rings the wrong way:\n" + "\n".join(wrong)


def test_the_ring_check_can_fail():
    assert ring_violations({"lab.engine.oor": {"lab.app.room.line"}, "lab.app.ui": set(), "lab.app.room.line": set()})
    assert ring_violations({"lab.real_vllm.live.driver": {"lab.commands.live"}, "lab.commands.live": set()})
    assert not ring_violations({"lab.commands.live": {"lab.real_vllm.live"}, "lab.real_vllm.live": {"lab.trace"}})


def third_party_imports(path: pathlib.Path) -> set[str]:
    """The top-level names of every package ``path`` imports (inside functions too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.add((node.module or "").split(".")[0])
    return out


def test_vllm_and_gradio_only_in_their_rings():
    wrong = []
    for p in LAB.rglob("*.py"):
        mod, names = module_name(p), third_party_imports(p)
        if "vllm" in names and ring_of(mod) != "lab.real_vllm" and mod not in VLLM_IMPORTERS_BELOW:
            wrong.append(f"{mod} imports vllm")
        if "gradio" in names and ring_of(mod) != "lab.app":
            wrong.append(f"{mod} imports gradio")
    assert not wrong, wrong


def test_commands_and_benches_only_in_commands():
    wrong = [
        module_name(p)
        for p in LAB.rglob("*.py")
        if (p.stem == "cli" or "bench" in p.stem) and ring_of(module_name(p)) != "lab.commands"
    ]
    assert not wrong, f"a command or bench outside lab/commands/: {wrong}"


def is_entry_point(path: pathlib.Path) -> bool:
    """A module that runs on its own: a package's __init__ or __main__, or one with a ``__name__ == "__main__"``
    block (``python -m lab.real_vllm.live.record_process``, the app's own subprocesses)."""
    return path.name in ("__init__.py", "__main__.py") or '__name__ == "__main__"' in path.read_text()


def test_no_lab_module_is_only_for_tests():
    """Every module of lab/ is imported by another one or runs on its own: code only tests use lives in tests/."""
    graph = import_graph()
    imported = set().union(*graph.values())
    paths = {module_name(p): p for p in LAB.rglob("*.py")}
    unused = sorted(m for m in graph if m not in imported and not is_entry_point(paths[m]))
    assert not unused, f"modules no lab module imports (move test-only code to tests/): {unused}"


def test_no_code_string_crosses_into_lab():
    """A vLLM environment is entered by a named module (``python -m lab.real_vllm…``), never ``python -c "…lab…"``:
    a code string is invisible to the import graph above."""
    wrong = []
    for p in [*LAB.rglob("*.py"), *(LAB.parent / "scripts").rglob("*.py")]:
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.List, ast.Tuple, ast.Call)):
                items = node.elts if not isinstance(node, ast.Call) else node.args
                if any(isinstance(e, ast.Constant) and e.value == "-c" for e in items):
                    wrong.append(f"{p.relative_to(LAB.parent)}:{node.lineno}")
    for p in [*(LAB.parent / "scripts").glob("*.sh"), LAB.parent / "Makefile"]:
        wrong += [f"{p.name}: {m.group(0)}" for m in re.finditer(r"-c ['\"][^'\"]*\blab\b", p.read_text())]
    assert not wrong, f"python -c code strings: {wrong}"
