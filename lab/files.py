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
