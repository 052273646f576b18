"""Paths the CLIs read and write: regular files only. A trace path that is a FIFO or a device (or a
symlink to /dev/zero) was read until memory ran out or hung; ``--out`` at a FIFO or a device node
(``/dev/full``, as root) replaced it with a regular file."""

from __future__ import annotations

import errno
import os
import stat


def regular_file_size(path: str | os.PathLike) -> int:
    """The size of ``path``, a regular file (symlinks followed); OSError (its strerror says why) if not."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file (a folder, a FIFO or a device): refused")
    return st.st_size


def check_output_path(path: str | os.PathLike) -> None:
    """``path`` may be written (atomically, replacing it): it does not exist yet or is a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"--out {os.fspath(path)!r} is not a regular file (a folder, a FIFO or a device): refused")


def write_text_atomically(path: str | os.PathLike, text: str) -> int:
    """Write ``text`` to ``path`` (checked by ``check_output_path``) through a temporary file beside it, so a reader
    never sees half a file; return the size written in bytes."""
    check_output_path(path)
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return os.path.getsize(path)
