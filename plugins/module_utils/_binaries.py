# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Facts about plugin binaries (their sha256, their VERSION answer) remembered by file identity,
so that a converged run neither hashes every binary nor runs every one of them again.

The memo is ``<directory>/.cnikit-binaries.json``, kept by cni_plugin_install in the directory
it installs into, keyed by absolute path (its sources, such as a distro package's directory, are
remembered there too). An entry holds while the file's identity is what it was when the facts
were learnt: device, inode, size, mtime and ctime. Rewriting a file, renaming another over it,
or changing its mode or owner moves its ctime, which no one can set back, so a changed binary
is always looked at again. A memo that root does not own, or that others may write, is ignored."""

from __future__ import annotations

import json
import os
import stat

from ._fileio import atomic_write, remove_written_file

MEMO_NAME = ".cnikit-binaries.json"
MEMO_FORMAT = 1


def identity(path: str) -> list | None:
    """The identity of the regular file at ``path`` (a link's target, as running it would), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class BinaryMemo:
    """The memo of one directory: ``get`` a fact of a file while its identity holds, ``put``
    facts learnt now, ``save`` when something was learnt."""

    def __init__(self, directory: str):
        self.path = os.path.join(directory, MEMO_NAME)
        self.entries = _load(self.path)
        self.learnt = False

    def get(self, path: str, fact: str):
        entry = self.entries.get(path)
        if entry is None or entry.get("identity") != identity(path):
            return None
        return entry.get(fact)

    def put(self, path: str, **facts) -> None:
        current = identity(path)
        if current is None:
            return
        entry = self.entries.get(path)
        if entry is None or entry.get("identity") != current:
            entry = self.entries[path] = {"identity": current}
        if any(entry.get(name) != value for name, value in facts.items()):
            entry.update(facts)
            self.learnt = True

    def forget_missing(self) -> None:
        """Drop the entries of files that are gone."""
        gone = [path for path in self.entries if identity(path) is None]
        for path in gone:
            del self.entries[path]
        self.learnt = self.learnt or bool(gone)

    def discard(self) -> None:
        remove_written_file(self.path)
        self.entries, self.learnt = {}, False

    def save(self) -> None:
        if self.learnt and os.path.isdir(os.path.dirname(self.path)):
            data = {"format": MEMO_FORMAT, "binaries": dict(sorted(self.entries.items()))}
            atomic_write(self.path, (json.dumps(data, indent=1) + "\n").encode(), 0o644)
            self.learnt = False


def _load(path: str) -> dict:
    """The entries of a memo file; none when it is missing, unreadable, not ours, or writable by
    others (whoever could write it could vouch for a binary they replaced)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return {}
        try:
            data = json.loads(handle.read())
        except ValueError:
            return {}
    entries = data.get("binaries") if isinstance(data, dict) and data.get("format") == MEMO_FORMAT else None
    if not isinstance(entries, dict):
        return {}
    return {path: entry for path, entry in entries.items() if isinstance(entry, dict)}


def recorded_versions(path: str) -> list | None:
    """The VERSION answer the memo beside ``path`` remembers for it, if it still holds."""
    versions = BinaryMemo(os.path.dirname(path)).get(path, "cni_versions")
    if isinstance(versions, list) and all(isinstance(v, str) for v in versions):
        return versions
    return None
