"""Open a file in a folder that a run's processes can change, never following a link.

A run's folder and everything in it is writable by the learner's code, which runs as the
server's own account: it can swap the run's folder, a folder in it or a file for a symbolic
link to anything that account can read. O_NOFOLLOW guards the last component of a path only,
and resolving a path before opening it leaves a moment in which a link can be swapped in. Here
every component is opened relative to the folder before it (``dir_fd``) with O_NOFOLLOW, so
no link is followed at any depth and what is read is what was checked.

The root itself (gpudojo's data dir, the server's root_dir) is the server's configuration and
is opened as it is, links and all.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from .errors import Forbidden


class LinkInPath(Forbidden):
    """A component of the path is a symbolic link (403): what it points to is not served."""

    default_code = "outside_run"


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
# O_NONBLOCK: a FIFO left where a file should be answers at once instead of hanging the
# request's thread until someone writes to it; it changes nothing for a regular file.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


def open_beneath(root: Path | str, parts: Sequence[str], *, folder: bool = False) -> int:
    """A read-only descriptor of the regular file (``folder``: the folder) root/parts[0]/...,
    opened without following a link below ``root``. The caller closes it.

    LinkInPath (a 403, code outside_run) when a component is a link; FileNotFoundError,
    NotADirectoryError or IsADirectoryError (OSError) when the path is missing or is not
    what was asked for: a FIFO, a socket or a device is not a regular file either."""
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\0" in part:
            raise ValueError(f"{part!r} is not one name of a file or folder")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = _FOLDER_FLAGS if folder or not last else _FILE_FLAGS
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as err:
                _raise_if_link(fd, part, parts[: i + 1], err)
                raise
            os.close(fd)
            fd = child
        mode = os.fstat(fd).st_mode
        if not folder and not stat.S_ISREG(mode):
            raise (IsADirectoryError if stat.S_ISDIR(mode) else FileNotFoundError)(
                f"{'/'.join(parts)} is not a regular file"
            )
        if not folder:
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _raise_if_link(dir_fd: int, name: str, shown: Sequence[str], err: OSError) -> None:
    # Linux answers ELOOP for a link opened with O_NOFOLLOW, ENOTDIR when O_DIRECTORY is asked
    # too; ENOTDIR is also the answer for a plain file where a folder should be.
    if not isinstance(err, NotADirectoryError) and err.errno != errno.ELOOP:
        return
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode):
            raise LinkInPath(f"{'/'.join(shown)} is a link; gpudojo does not follow links in a run's folder.") from err


def open_file_beneath(root: Path | str, parts: Sequence[str]):  # type: ignore[no-untyped-def]
    """open_beneath as a binary file object (closed by the caller, e.g. in a ``with``)."""
    return os.fdopen(open_beneath(root, parts), "rb")
