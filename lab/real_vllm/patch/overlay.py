"""The overlay: vLLM's patched modules imported from a scratch directory instead of the wheel, in the
process that runs them (``.venv-vllm``; never the lab's own or the app's). The installed files are never
written; an import hook (first on ``sys.meta_path``) hands Python the patched file for each patched
module's name, so ``import vllm.v1.worker.gpu.…`` anywhere (vLLM's own imports included) gets it.

``LineProof`` proves a patch ran: it traces only the patched files' frames and counts every line the
patch added that executed.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections import Counter
from pathlib import Path


def module_name(path: str) -> str:
    """``vllm/v1/worker/gpu/x/y.py`` -> ``vllm.v1.worker.gpu.x.y`` (``__init__.py``: the package)."""
    parts = path[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class OverlayFinder(importlib.abc.MetaPathFinder):
    """Finds each patched module in the overlay directory; every other name goes on to the wheel."""

    def __init__(self, overlay: Path, paths: list[str]):
        self.files = {module_name(p): (overlay / p).resolve() for p in paths}
        self.packages = {module_name(p) for p in paths if p.endswith("/__init__.py")}

    def find_spec(self, fullname, path=None, target=None):
        file = self.files.get(fullname)
        if file is None:
            return None
        spec = importlib.util.spec_from_file_location(
            fullname,
            file,
            submodule_search_locations=None if fullname not in self.packages else self._wheel_dirs(fullname),
        )
        return spec

    @staticmethod
    def _wheel_dirs(fullname: str) -> list[str]:
        # A patched package's submodules still come from the wheel.
        parent, _, last = fullname.rpartition(".")
        base = sys.modules[parent].__path__ if parent else sys.path
        return [str(Path(b) / last) for b in base]


def install(overlay: Path, paths: list[str]) -> OverlayFinder:
    """Put the overlay first on ``sys.meta_path``; refuses after a patched module was imported."""
    finder = OverlayFinder(overlay, paths)
    already = [m for m in finder.files if m in sys.modules]
    if already:
        raise RuntimeError(f"{already} were imported before the overlay: the patch would not be the code run")
    sys.meta_path.insert(0, finder)
    return finder


class LineProof:
    """Counts the executed lines of the patched files that the patch added (``added``: file -> line
    numbers). Only frames of those files are traced line by line; every other call returns at once."""

    def __init__(self, overlay: Path, added: dict[str, list[int]]):
        self.wanted = {str((overlay / p).resolve()): (p, set(lines)) for p, lines in added.items()}
        self.hits: Counter = Counter()  # (path, line) -> times run

    def _local(self, frame, event, arg):
        if event == "line":
            path, lines = self.wanted[frame.f_code.co_filename]
            if frame.f_lineno in lines:
                self.hits[(path, frame.f_lineno)] += 1
        return self._local

    def _global(self, frame, event, arg):
        return self._local if frame.f_code.co_filename in self.wanted else None

    def __enter__(self):
        for file, (path, _) in self.wanted.items():
            if module_name(path) in sys.modules:
                self.imported(file, path)
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(None)
        return False

    def imported(self, overlay_file: str, path: str) -> None:
        """A patched module imported before tracing began (vLLM is imported first: tracing every frame of
        that import would double a run): its added top-level lines ran once, as every import runs them."""
        text = Path(overlay_file).read_text().splitlines()
        for line in self.wanted[overlay_file][1]:
            if line <= len(text) and text[line - 1][:1] not in (" ", "\t", ""):
                self.hits[(path, line)] += 1

    def report(self) -> dict:
        """Per file: the added lines, and which ran: [line, times] pairs (JSON keeps them as numbers)."""
        out = {}
        for path, lines in self.wanted.values():
            ran = [[line, self.hits[(path, line)]] for line in sorted(lines) if self.hits[(path, line)]]
            out[path] = {"added": sorted(lines), "ran": ran}
        return out


def user_traceback(exc: BaseException, overlay: Path) -> str | None:
    """vLLM's traceback of ``exc`` when one of its frames is in a patched file (the patch raised, or vLLM
    code it changed did), with the overlay's paths written as the wheel's; else None."""
    import traceback

    root = str(overlay.resolve()) + "/"
    chain, e = [], exc
    while e is not None and e not in chain:  # the cause too: vLLM's loader re-raises an import error
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        in_patch = isinstance(e, SyntaxError) and str(e.filename or "").startswith(root)
        if in_patch or any(f.filename.startswith(root) for f in traceback.extract_tb(e.__traceback__)):
            return "".join(traceback.format_exception(exc)).replace(root, "")
    return None
