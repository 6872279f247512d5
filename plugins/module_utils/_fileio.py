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
import secrets
import stat

TEMP_SUFFIX = ".tmp"
SWEPT_WRITE_ATTEMPTS = 5
TEMP_ALPHABET = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


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
    fd = os.open(path, DIRECTORY_FLAGS)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, mode: int = 0o644,
                 owner: int | None = None, group: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, with ``mode`` and optional ownership."""
    directory, name = os.path.split(os.path.abspath(path))
    fd = os.open(directory, DIRECTORY_FLAGS)
    try:
        atomic_write_at(fd, name, data, mode, owner, group)
    finally:
        os.close(fd)


def atomic_write_at(directory: int, name: str, data: bytes, mode: int = 0o644,
                    owner: int | None = None, group: int | None = None) -> None:
    """:func:`atomic_write` of ``name`` in the directory open as ``directory``: every name is
    resolved relative to that descriptor, so the directory cannot be swapped for a symlink
    between its check and the write.

    The temporary file stays flocked until it is renamed into place, so a writer killed midway
    leaves an unlocked one, which the next write or removal of ``name`` deletes."""
    remove_abandoned_temp_files(directory, name)
    # Another writer's sweep may take our new file for abandoned before we lock it: write anew.
    for _attempt in range(SWEPT_WRITE_ATTEMPTS):
        if _replace_through_temp_file(directory, name, data, mode, owner, group):
            break
    else:
        raise OSError(errno.EAGAIN, f"its temporary file was removed by others {SWEPT_WRITE_ATTEMPTS} times", name)
    os.fsync(directory)


def _temp_name(name: str) -> str:
    """The one spelling of a temporary file of ``name``: ``.<name>.<8 random characters>.tmp``."""
    return f".{name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


def _is_temp_name_of(candidate: str, name: str) -> bool:
    """Whether :func:`_temp_name` (or tempfile.mkstemp, which releases before 1.0 used, with
    its alphabet) could have made ``candidate`` for ``name``: only such files are swept."""
    random = candidate[len(name) + 2:-len(TEMP_SUFFIX)]
    return candidate == f".{name}.{random}{TEMP_SUFFIX}" and len(random) == 8 and \
        all(ch in TEMP_ALPHABET for ch in random)


def _replace_through_temp_file(directory: int, name: str, data: bytes, mode: int,
                               owner: int | None, group: int | None) -> bool:
    tmp_name = _temp_name(name)
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                 dir_fd=directory)
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
            os.replace(tmp_name, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name, dir_fd=directory)
        raise
    return True


def remove_abandoned_temp_files(directory: int, name: str) -> None:
    """Delete the temporary files of ``name`` that killed writers left: those not flocked."""
    for candidate in os.listdir(directory):
        if _is_temp_name_of(candidate, name):
            remove_if_unlocked(directory, candidate)


def remove_if_unlocked(directory: int, name: str) -> None:
    """Delete regular file ``name`` of ``directory`` unless a live process holds an flock on it
    (a writer's temporary file, a lock in use). A file gone meanwhile, one that cannot be
    opened, a symlink, a subdirectory or a fifo is left alone."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except OSError:
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=directory)
    except BlockingIOError:
        pass  # held: in use
    finally:
        os.close(fd)


def remove_written_file(path: str) -> bool:
    """Remove a file atomic_write maintains, with any temporary file a killed writer left for it;
    True if the file existed."""
    directory, name = os.path.split(os.path.abspath(path))
    try:
        fd = os.open(directory, DIRECTORY_FLAGS)
    except FileNotFoundError:
        return False
    try:
        return remove_written_file_at(fd, name)
    finally:
        os.close(fd)


def remove_written_file_at(directory: int, name: str) -> bool:
    """:func:`remove_written_file` of ``name`` in the directory open as ``directory``."""
    remove_abandoned_temp_files(directory, name)
    return remove_if_exists(name, directory)


class NotARegularFile(OSError):
    """A name that holds a symlink, a directory, a fifo or a device where a file is expected."""


def read_regular_at(directory: int, name: str) -> bytes | None:
    """The bytes of regular file ``name`` in ``directory``, None when there is none;
    NotARegularFile for anything else (a symlink is never followed)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotARegularFile(errno.ELOOP, "a symbolic link, not a regular file", name) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotARegularFile(errno.EINVAL, "not a regular file", name)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def read_if_exists(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def remove_if_exists(path: str, directory: int | None = None) -> bool:
    """Remove ``path`` (relative to ``directory`` when given); True if it existed."""
    try:
        os.unlink(path, dir_fd=directory)
    except FileNotFoundError:
        return False
    return True
