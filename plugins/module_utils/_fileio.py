# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The one way this collection writes a file that matters (conflist, cache, manifest, binary):
a temporary file in the same directory, fsync, rename over the target, fsync the directory.
A crash at any point leaves either the old content or the new one, never a truncated file."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile

TEMP_SUFFIX = ".tmp"
SWEPT_WRITE_ATTEMPTS = 5


def ensure_dir(path: str, mode: int) -> None:
    """Create ``path`` with ``mode``, and missing parents with 0755, whatever the umask.

    os.makedirs applies the umask: under 077 a runtime's conf dir came out 0700, under 000 the
    parents of root's plugin directory came out world-writable. Existing directories are left
    as they are."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(os.path.abspath(path))
    if parent != os.path.abspath(path):
        ensure_dir(parent, 0o755)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        if os.path.isdir(path):
            return  # created meanwhile by someone else: theirs to set
        raise
    os.chmod(path, mode)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, mode: int = 0o644,
                 owner: int | None = None, group: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, with ``mode`` and optional ownership.

    The temporary file stays flocked until it is renamed into place, so a writer killed midway
    leaves an unlocked one, which the next write or removal of ``path`` deletes."""
    remove_abandoned_temp_files(path)
    # Another writer's sweep may take our new file for abandoned before we lock it: write anew.
    for _attempt in range(SWEPT_WRITE_ATTEMPTS):
        if _replace_through_temp_file(path, data, mode, owner, group):
            break
    else:
        raise OSError(errno.EAGAIN, f"its temporary file was removed by others {SWEPT_WRITE_ATTEMPTS} times", path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def _replace_through_temp_file(path: str, data: bytes, mode: int, owner: int | None, group: int | None) -> bool:
    directory, name = os.path.split(os.path.abspath(path))
    fd, tmp_path = tempfile.mkstemp(prefix=f".{name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            if os.fstat(handle.fileno()).st_nlink == 0:
                return False
            os.fchmod(handle.fileno(), mode)
            if owner is not None or group is not None:
                os.fchown(handle.fileno(), -1 if owner is None else owner, -1 if group is None else group)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_path)
        raise
    return True


def remove_abandoned_temp_files(path: str) -> None:
    """Delete the temporary files of ``path`` that killed writers left: those not flocked."""
    directory, name = os.path.split(os.path.abspath(path))
    prefix = f".{name}."
    try:
        candidates = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(TEMP_SUFFIX)]
    except FileNotFoundError:
        return
    for candidate in candidates:
        remove_if_unlocked(os.path.join(directory, candidate))


def remove_if_unlocked(path: str) -> None:
    """Delete ``path`` unless a live process holds an flock on it (a writer's temporary file, a
    lock in use); a file gone meanwhile, or that cannot be opened, is left to others."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    except BlockingIOError:
        pass  # held: in use
    finally:
        os.close(fd)


def remove_written_file(path: str) -> bool:
    """Remove a file atomic_write maintains, with any temporary file a killed writer left for it;
    True if the file existed."""
    remove_abandoned_temp_files(path)
    return remove_if_exists(path)


def read_if_exists(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def remove_if_exists(path: str) -> bool:
    """Remove ``path``; True if it existed."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True
