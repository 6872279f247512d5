# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The cache dir itself: its directories opened only when they are ours, and the warning about a
cache dir others can write. Apart from the result cache (``_cache``), which uses them, so that a
task that keeps only a directory of its own there (cni_cluster_member's records) or only warns
(every task with a ``cache_dir``) does not compile the result cache on each run."""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import stat

from ._errors import ConfigError
from ._fileio import DIRECTORY_FLAGS, ensure_dir

RESULTS_SUBDIR = "results"
LOCKS_SUBDIR = "cnikit-locks"  # ours, beside libcni's results/
LOCK_ATTEMPTS = 20  # a directory or lock file removed by a concurrent clean-up is opened anew, this many times at most


@contextlib.contextmanager
def open_subdir(cache_dir: str, subdir: str, create: bool = False):
    """The descriptor of ``cache_dir/subdir``, checked by :func:`_open_checked_subdir`; None when
    it does not exist and ``create`` is false. Closed on leaving. The one way a directory of the
    cache dir is opened: the result cache's, the locks', the intent markers' and
    cni_cluster_member's records' (``_cluster_member.RECORD_DIR``)."""
    fd = _open_checked_subdir(cache_dir, subdir, create)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _open_checked_subdir(cache_dir: str, subdir: str, create: bool) -> int | None:
    """Open a directory of the cache dir without following a symlink, creating it (0700) if
    asked, and make sure it is ours: a real directory, owned by root or the user we run as,
    that no group or other user can write. Anyone else who can write to the cache dir could otherwise
    point it at a directory whose files we would then create, truncate or delete, as root.
    (Root's directories are trusted by an unprivileged run too: cni_info reads root's cache.)"""
    path = os.path.join(cache_dir, subdir)
    for _attempt in range(LOCK_ATTEMPTS):
        try:
            fd = os.open(path, DIRECTORY_FLAGS | os.O_NOFOLLOW)
            break
        except FileNotFoundError:
            if not create:
                return None
            _make_subdir(cache_dir, path)
        except OSError as exc:
            raise ConfigError("cache_dir", _unusable_dir(cache_dir, path, exc), cache_dir) from None
    else:
        raise ConfigError("cache_dir", f"{path} was removed under us {LOCK_ATTEMPTS} times", cache_dir)
    st = os.fstat(fd)
    problem = None
    if st.st_uid not in (0, os.geteuid()):
        problem = f"is owned by uid {st.st_uid}, neither root nor uid {os.geteuid()} that runs the collection"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"is writable by group or others (mode 0{stat.S_IMODE(st.st_mode):o})"
    if problem:
        os.close(fd)
        raise ConfigError("cache_dir", f"{path} {problem}: refusing to use it; make it a directory only its "
                          "owner can write, or remove it", cache_dir)
    return fd


def cache_dir_warning(cache_dir: str) -> str | None:
    """What is wrong with ``cache_dir`` itself, if another user can change what it holds: owned
    by someone other than root or the user we run as, or writable by group or others. Its
    subdirectories are checked strictly (:func:`_open_checked_subdir`), but whoever can write the
    cache dir can move them away, or swap in a root-owned one from another directory they can write,
    with its entries. libcni, podman, containerd and cri-o use such a directory without a word
    (libcni creates it 0700 and checks nothing), so it is used, with a warning; a missing one is
    created 0700 and needs none."""
    try:
        st = os.stat(cache_dir)  # the operator may point cache_dir through a symlink
    except OSError:
        return None
    problems = []
    if st.st_uid not in (0, os.geteuid()):
        problems.append(f"is owned by {_user_name(st.st_uid)}, neither root nor the user the collection runs as")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problems.append("is writable by group or others")
    if not problems:
        return None
    return (f"cache_dir {cache_dir} (owner {_user_name(st.st_uid)}, mode 0{stat.S_IMODE(st.st_mode):o}) "
            f"{' and '.join(problems)}: another user can move its {RESULTS_SUBDIR}/ and {LOCKS_SUBDIR}/ away or put "
            "another root-owned directory of cache entries in their place, so that the modules forget attachments, or "
            "DEL the attachments those entries record with the configuration recorded in them. It is used all the same, "
            "as libcni and the runtimes use it. To silence this, make it owned by root and writable by its owner only "
            f"(chown root: {cache_dir}; chmod 0755 {cache_dir})")


def warn_of_cache_dir(host, cache_dir: str) -> None:
    """Give :func:`cache_dir_warning` through ``host.warn``, if there is one."""
    warning = cache_dir_warning(cache_dir)
    if warning:
        host.warn(warning)


def _user_name(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _make_subdir(cache_dir: str, path: str) -> None:
    try:
        ensure_dir(cache_dir, 0o700)
        os.mkdir(path, 0o700)  # the umask can only narrow it, and the owner's bits are all we need
    except FileExistsError:
        pass  # made meanwhile, or not a directory: the open that follows tells
    except OSError as exc:
        raise ConfigError("cache_dir", _unusable_dir(cache_dir, path, exc), cache_dir) from None


def _unusable_dir(cache_dir: str, path: str, exc: OSError) -> str:
    if exc.errno in (errno.ENOTDIR, errno.ELOOP) and os.path.islink(path):
        return f"{path} is a symbolic link; the collection never follows links inside the cache dir"
    if exc.errno == errno.ENOTDIR and not os.path.isdir(cache_dir):
        return f"cannot use {cache_dir}: not a directory"
    return f"cannot use {path} ({exc.strerror})"
