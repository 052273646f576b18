"""Paths the CLIs read and write: regular files only. A trace path that is a FIFO or a device (or a
symlink to /dev/zero) was read until memory ran out or hung; ``--out`` at a FIFO or a device node
(``/dev/full``, as root) replaced it with a regular file. ``--out`` is never followed through a symlink either:
``/dev/stdout`` is one (to ``/proc/self/fd/1``), and a regular file behind it was replaced by the page, link and
all; a planted ``<out>.tmp`` symlink had its target overwritten (hostile probe 2026-12-07, M8)."""

from __future__ import annotations

import errno
import os
import secrets
import stat


def regular_file_size(path: str | os.PathLike) -> int:
    """The size of ``path``, a regular file (symlinks followed); OSError (its strerror says why) if not."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file (a folder, a FIFO or a device): refused")
    return st.st_size


def check_output_path(path: str | os.PathLike) -> None:
    """``path`` may be written (atomically, replacing it): it does not exist yet or is a regular file, and is not a
    symlink (never followed, never replaced: ``/dev/stdout`` is one)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise ValueError(
            f"--out {os.fspath(path)!r} is a symlink (as /dev/stdout is): refused; name the file itself "
            "(a symlink is never followed or replaced)"
        )
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"--out {os.fspath(path)!r} is not a regular file (a folder, a FIFO or a device): refused")


def _create_exclusively(path: str) -> tuple[str, int]:
    """A new temporary file beside ``path`` under a random name, created exclusively (``O_EXCL``: never one that
    exists, a planted symlink or FIFO included) and never through a symlink (``O_NOFOLLOW``): (name, fd)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(8):
        tmp = f"{path}.{secrets.token_hex(6)}.tmp"
        try:
            return tmp, os.open(tmp, flags, 0o666)  # the umask applies, as for open(path, "w")
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, f"could not create a temporary file beside {path!r}")


def write_text_atomically(path: str | os.PathLike, text: str) -> int:
    """Write ``text`` to ``path`` (checked by ``check_output_path``) through a temporary file beside it, so a reader
    never sees half a file; return the size written in bytes."""
    path = os.fspath(path)
    check_output_path(path)
    tmp, fd = _create_exclusively(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        check_output_path(path)  # again, just before the rename: a symlink planted meanwhile is not replaced
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return os.path.getsize(path)
