"""The public API of ``lab``: the package docstring's example runs, and ``lab.run`` says its options."""

from __future__ import annotations

import doctest
import inspect

import lab
from lab.kernels import timed_run


def test_package_docstring_example_runs():
    result = doctest.testmod(lab, verbose=False)
    assert result.attempted >= 4 and result.failed == 0


def test_run_takes_explicit_keywords_that_the_timed_run_accepts():
    params = inspect.signature(lab.run).parameters
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()), "no **kwargs"
    accepted = inspect.signature(timed_run.run).parameters
    assert set(params) <= set(accepted), set(params) - set(accepted)
    # Every option the user may set is in lab.run (the rest are the app's and the CLI's internals).
    assert {"steps", "repeats", "warmup", "head_config", "seed", "threads", "seconds", "trace"} <= set(params)
