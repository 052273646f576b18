"""The walkthroughs in notebooks/: each runs top to bottom within its budget, carries no outputs in git,
and ends with its exercises; notebook 06 skips its live cells cleanly without a live environment and
runs them where one exists (here: a stand-in recorder)."""

from __future__ import annotations

import json
import os
import pathlib
import stat
import subprocess
import sys
import time

import nbclient
import nbformat
import pytest

from lab.exercises import KERNEL_SPEC, LIVE_SPEC, questions

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
SERIES = (
    "01_tour",
    "02_upper_bound_and_the_kernel",
    "03_eagle_draft_windows",
    "04_mamba_hybrid_and_history",
    "05_kernels",
    "06_real_vllm_live",
    "07_every_path",
    "08_fix_what_43991_missed",
)

# Budgets: a notebook runs top to bottom in 60 s on the 2-core development machine (measured times are in
# docs/workshop.md), a cell in 30 s unless its metadata says {"lab": {"budget_s": N}}. LAB_NOTEBOOK_SLACK
# multiplies both on a slower or busier machine.
SLACK = float(os.environ.get("LAB_NOTEBOOK_SLACK", "1"))
NOTEBOOK_BUDGET_S = 60 * SLACK
PLOTLY = "application/vnd.plotly.v1+json"  # a plotly figure in a cell's output
CELL_BUDGET_S = 30 * SLACK


def _declared(cell) -> float | None:
    return cell.get("metadata", {}).get("lab", {}).get("budget_s")


def _cell_budget(cell) -> int:
    declared = _declared(cell)
    return int(CELL_BUDGET_S if declared is None else declared * SLACK)


def _live_environment_here() -> bool:
    return (ROOT / ".venv-live").exists() or (ROOT / ".venv-vllm-live").exists() or "LAB_LIVE_PYTHON" in os.environ


def _vllm_here() -> bool:
    return (ROOT / ".venv-vllm").exists() or "LAB_VLLM_PYTHON" in os.environ


def _kernel_env(**extra) -> dict:
    env = dict(os.environ)
    # The kernel imports this checkout's lab (not whichever one is pip-installed into the venv).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.update(extra)
    return env


def execute(path: pathlib.Path, **env):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout_func=_cell_budget, resources={"metadata": {"path": str(path.parent)}}
    )
    start = time.perf_counter()
    client.execute(env=_kernel_env(**env))
    return nb, time.perf_counter() - start


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def _text(nb) -> str:
    parts = []
    for o in _outputs(nb):
        if o.get("output_type") == "stream":
            parts.append(o.get("text", ""))
        elif "data" in o:
            parts.append(o["data"].get("text/plain", ""))
    return "\n".join(parts)


def test_the_series_is_there():
    assert [p.stem for p in NOTEBOOKS] == list(SERIES)
    assert not list(NOTEBOOK_DIR.glob("*.py")), "notebooks are .ipynb (outputs stripped); no paired scripts"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_carries_no_outputs(path):
    raw = json.loads(path.read_text())
    nbformat.validate(nbformat.from_dict(raw))
    for i, cell in enumerate(raw["cells"]):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{path.name} cell {i} carries outputs: run `make notebooks-strip`"
            assert cell["execution_count"] is None, f"{path.name} cell {i} carries an execution count"
    assert "widgets" not in raw["metadata"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_ends_with_its_exercises(path):
    nb = nbformat.read(path, as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    nn = path.stem[:2]
    assert questions(nn), nn
    for qid in questions(nn):
        assert f'check("{qid}", answer)' in source and f'ask("{qid}")' in source, qid
    assert nb.cells[0].cell_type == ("code" if nn == "06" else "markdown")  # 06 detects first; the others: prose


def test_exercises_name_the_scenarios_the_notebooks_open():
    source = {p.stem[:2]: p.read_text() for p in NOTEBOOKS}
    assert KERNEL_SPEC in source["05"]
    assert "LIVE_SPEC" in source["06"]


def test_make_lab_opens_jupyterlab_on_the_notebooks():
    out = subprocess.run(
        ["make", "-n", "lab", "VENV=.venv"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert "bin/jupyter lab" in out and f"--ServerApp.root_dir={ROOT}/notebooks" in out
    assert f"PYTHONPATH={ROOT}" in out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_within_budget(path):
    nb, seconds = execute(path)
    errors = [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert not errors, [(e["ename"], e["evalue"]) for e in errors]
    assert _outputs(nb)
    budget = NOTEBOOK_BUDGET_S
    if path.stem.startswith("06") and _live_environment_here() or path.stem.startswith("08") and _vllm_here():
        # Recording builds and runs vLLM (06), a fix runs vLLM's code (08): cells that declare a budget may use it.
        budget += sum(_declared(c) * SLACK for c in nb.cells if _declared(c) is not None)
    assert seconds <= budget, f"{path.name} took {seconds:.1f} s (budget {budget:.0f} s)"
    # Unanswered exercises are reported, not failed.
    assert f"{path.stem[:2]}.1: no answer yet" in _text(nb)
    if path.stem.startswith("01"):  # lab.views.explore: the step slider and view picker, as a widget
        assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in _outputs(nb))
        # A figure as a cell's value is shown fitted to the output area, with the lab's toolbar (issue 49, minor 19:
        # IPython's _ipython_display_ went past both; lab.views.common.LabFigure).
        plots = [o["data"][PLOTLY] for o in _outputs(nb) if PLOTLY in o.get("data", {})]
        assert plots and all(p.get("config", {}).get("displaylogo") is False for p in plots)
    if path.stem.startswith("06") and not _live_environment_here():
        text = _text(nb)
        assert "No live vLLM environment" in text and text.count("skipped: no live vLLM environment") == 3


STAND_IN = """#!{python}
# A stand-in for the live environment's interpreter: answers the probe, and "records" with the embedded
# engine, so notebook 06's live cells run end to end without vLLM.
import sys
sys.path.insert(0, {root!r})
args = sys.argv[1:]
if args[:1] == ["-c"]:
    print('{{"ok": true, "reason": ""}}')
elif args[:3] == ["-m", "lab", "record"]:
    from lab import Scenario, simulate
    spec, out = args[args.index("--spec") + 1], args[args.index("--out") + 1]
    trace = simulate(Scenario.from_spec(spec))
    trace.save(out)
    print("stand-in recorded", len(trace.steps), "steps")
else:
    sys.exit("stand-in: unexpected arguments " + repr(args))
"""


def test_live_notebook_runs_its_live_cells_where_an_environment_answers(tmp_path):
    fake = tmp_path / "python"
    fake.write_text(STAND_IN.format(python=sys.executable, root=str(ROOT)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    nb, _ = execute(NOTEBOOK_DIR / "06_real_vllm_live.ipynb", LAB_LIVE_PYTHON=str(fake))
    errors = [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert not errors, [(e["ename"], e["evalue"], e["traceback"][-1:]) for e in errors]
    text = _text(nb)
    assert "live vLLM environment found" in text and "skipped" not in text
    assert "stand-in recorded" in text and LIVE_SPEC in text
    # The stand-in recorded with the embedded engine, so every field agrees on every step.
    n = len([ln for ln in text.splitlines() if "steps agree" in ln])
    assert n == 7 and "first difference" not in text


def test_a_cell_over_its_budget_fails(tmp_path):
    nb = nbformat.v4.new_notebook()
    slow = nbformat.v4.new_code_cell("import time\ntime.sleep(5)")
    slow.metadata["lab"] = {"budget_s": 1}
    nb.cells = [nbformat.v4.new_code_cell("1 + 1"), slow]
    path = tmp_path / "slow.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(nbclient.exceptions.CellTimeoutError):
        execute(path)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_opens_with_what_you_learn_need_and_how_long(path):
    # Issue 49 (ux review 5): the notebooks opened with long prose and no "you will learn / you need / time".
    import json
    import re

    first = next(c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown")
    text = "".join(first["source"])
    assert "**You will learn:**" in text and "**You need:**" in text, path.name
    assert re.search(r"\*\*About \d+ minutes\*\*", text), path.name


def test_notebook_01_opens_on_the_claim_in_one_picture():
    import json

    cells = json.loads((NOTEBOOK_DIR / "01_tour.ipynb").read_text())["cells"]
    figures = [c for c in cells if c["cell_type"] == "code" and "_figure(" in "".join(c["source"])]
    assert "hero_figure(" in "".join(figures[0]["source"])
