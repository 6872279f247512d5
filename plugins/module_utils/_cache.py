# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The result cache, in libcni's exact layout and format so that cnitool, containerd and cri-o
read ours and we read theirs: ``<cache_dir>/results/<network>-<container id>-<ifname>``, one
compact JSON object of kind ``cniCacheV1``. Unlike libcni, entries are written atomically and
read tolerantly, and attachments are serialised with locks.

Other runtimes (podman, containerd, cri-o) share this directory. An entry this collection wrote
carries a ``cnikit`` member, which libcni's readers ignore: it is how an attachment is known
to be ours. Every other entry is foreign, and is changed only when a user names it."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import errno
import fcntl
import json
import os
from dataclasses import dataclass, field
from typing import NamedTuple

from ._cache_dir import LOCK_ATTEMPTS, LOCKS_SUBDIR, RESULTS_SUBDIR, open_subdir
from ._errors import CNIError, ConfigError
from ._fileio import (
    NotARegularFile, atomic_write_at, read_regular_at, remove_if_exists, remove_if_unlocked, remove_written_file_at,
)
from ._identifiers import ID_PATTERN, AttachmentKey, check_network_name

KIND = "cniCacheV1"
PENDING_SUBDIR = "cnikit-pending"  # intent markers of ADDs in progress
LOCK_STRIPES = 256  # attachment locks are striped so lock files never accumulate
STRIPED_LOCK_KINDS = ("attachment", "interface")
LOCK_SUFFIX = ".lock"
OWNER_KEY = "cnikit"  # the member that marks an entry as written by this collection

# Why an ADD's intent marker can outlive it: the words of every message about one.
UNFINISHED_ADD_CAUSES = "its run was stopped, or its rollback failed"


def left_by_unfinished_add(marker: str) -> str:
    """What an ADD that did not finish, whose intent marker is at ``marker``, means for the host
    and for the attachment's next run."""
    return (f"what the plugins made may be left on the host (an interface, an address, rules); the intent marker "
            f"{marker} records it, and the next cni_attach of this attachment (state present or absent) DELs it first")


class CacheError(CNIError):
    """A cache file that exists but cannot be used (empty, truncated, not JSON, wrong shape)."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"unusable cache file {path}: {reason}")

    def keys(self, network: str) -> list:
        """The (container ID, ifname) pairs this file may be of on ``network``, read from its
        name ``<network>-<container id>-<ifname>``; both parts may hold '-', so every reading
        that makes a valid ID and interface name is given, shortest container ID first."""
        name = os.path.basename(self.path)
        if not name.startswith(f"{network}-"):
            return []
        rest = name[len(network) + 1:]
        pairs = []
        for cut in (i for i, ch in enumerate(rest) if ch == "-"):
            try:
                key = AttachmentKey(network, rest[:cut], rest[cut + 1:])
            except ConfigError:
                continue
            pairs.append((key.container_id, key.ifname))
        return pairs


@dataclass
class CacheEntry:
    """One attachment as libcni caches it. ``config`` holds the conflist bytes used at ADD
    (None for a legacy entry, which is a bare result)."""

    network: str
    container_id: str
    ifname: str
    config: bytes | None = None
    netns: str = ""
    cni_args: list = field(default_factory=list)
    capability_args: dict = field(default_factory=dict)
    result: dict | None = None
    path: str = ""
    managed: bool = False  # written by this collection (the OWNER_KEY member); else foreign
    reported_defects: list = field(default_factory=list)  # tolerated CHECK defects already warned of

    @property
    def key(self) -> AttachmentKey:
        return AttachmentKey(self.network, self.container_id, self.ifname)

    @property
    def effective_netns(self) -> str:
        """The namespace the attachment lives in: ``netns``, or, where the entry has none (libcni
        before 1.2 writes none), the ``sandbox`` of the result's interface; "" when neither
        says."""
        if self.netns:
            return self.netns
        interfaces = [i for i in (self.result or {}).get("interfaces") or [] if isinstance(i, dict)]
        sandboxes = [i.get("sandbox") for i in interfaces if i.get("name") == self.ifname] + \
            [i.get("sandbox") for i in interfaces]
        return next((s for s in sandboxes if isinstance(s, str) and s), "")

    def identity(self) -> dict:
        """The attachment as the modules return it; ``managed`` is false for another runtime's."""
        return dict(attachment_identity(self.network, self.container_id, self.ifname, self.effective_netns),
                    managed=self.managed)

    def to_json(self) -> bytes:
        # libcni's field order; result and capabilityArgs are Go maps, hence sorted keys.
        data = {"kind": KIND, "containerId": self.container_id,
                "config": base64.b64encode(self.config or b"").decode(),
                "ifName": self.ifname, "networkName": self.network}
        if self.netns:
            data["netns"] = self.netns
        if self.cni_args:
            data["cniArgs"] = self.cni_args
        if self.capability_args:
            data["capabilityArgs"] = _sorted(self.capability_args)
        if self.result is not None:
            data["result"] = _sorted(self.result)
        if self.managed:
            data[OWNER_KEY] = {"managed": True}
            if self.reported_defects:
                data[OWNER_KEY]["reportedDefects"] = sorted(self.reported_defects)
        return json.dumps(data, separators=(",", ":")).encode()


def _sorted(value: dict) -> dict:
    return json.loads(json.dumps(value, sort_keys=True))


def _parse(path: str, data: bytes, key: AttachmentKey | None = None) -> CacheEntry:
    if not data.strip():
        raise CacheError(path, "the file is empty")
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise CacheError(path, f"not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise CacheError(path, "not a JSON object")
    if raw.get("kind") != KIND:
        if "kind" in raw or "cniVersion" not in raw:
            raise CacheError(path, f"unknown kind {raw.get('kind')!r}")
        # libcni's legacy format: the bare result, known only by its file's key (and skipped
        # by listings, as libcni's GetCachedAttachments skips it).
        network, container_id, ifname = (key.network, key.container_id, key.ifname) if key else ("", "", "")
        return CacheEntry(network, container_id, ifname, result=raw, path=path)
    try:
        config = base64.b64decode(raw.get("config") or "", validate=True)
    except (ValueError, TypeError):  # binascii.Error is a ValueError; so is a non-ASCII string
        raise CacheError(path, "config is not base64") from None
    result = raw.get("result")
    args, caps = raw.get("cniArgs") or [], raw.get("capabilityArgs") or {}
    if (result is not None and not isinstance(result, dict)) or not isinstance(args, list) or not isinstance(caps, dict):
        raise CacheError(path, "result, cniArgs or capabilityArgs has the wrong type")
    for key in ("containerId", "ifName", "networkName"):
        if not isinstance(raw.get(key), str) or not raw.get(key):
            raise CacheError(path, f"{key} is missing")
    owner = raw.get(OWNER_KEY) if isinstance(raw.get(OWNER_KEY), dict) else {}
    reported = owner.get("reportedDefects")
    return CacheEntry(raw["networkName"], raw["containerId"], raw["ifName"], config=config,
                      netns=str(raw.get("netns") or ""), cni_args=args, capability_args=caps,
                      result=result, path=path, managed=owner.get("managed") is True,
                      reported_defects=[r for r in reported if isinstance(r, str)] if isinstance(reported, list) else [])


def attachment_identity(network: str, container_id: str, ifname: str, netns: str) -> dict:
    """An attachment as the modules return it (cni_attach's items, cni_gc's, cni_netns's and
    cni_info's): the one shape, whether it is known from a declaration or from a cache entry."""
    return {"network": network, "container_id": container_id, "ifname": ifname, "netns": netns}


class CacheListing(NamedTuple):
    """One read of the results directory: the usable cniCacheV1 entries, sorted by file name, and
    the CacheErrors of the files that could not be used."""

    entries: list
    problems: list

    def of_network(self, network: str) -> list:
        return [entry for entry in self.entries if entry.network == network]


class ResultCache:
    """libcni's result cache in ``directory`` (a cache_dir), with what this collection keeps beside
    it: the intent markers of ADDs in progress (``cnikit-pending/``) and the lock files
    (``cnikit-locks/``). The engine owns one; its callers read through it."""

    def __init__(self, directory: str):
        self.directory = directory

    # -- entries ---------------------------------------------------------------------------

    def path(self, key: AttachmentKey) -> str:
        return os.path.join(self.directory, RESULTS_SUBDIR, key.file_name)

    def write(self, entry: CacheEntry) -> str:
        key = entry.key  # checked before any file is touched
        with open_subdir(self.directory, RESULTS_SUBDIR, create=True) as directory:
            atomic_write_at(directory, key.file_name, entry.to_json(), mode=0o600)
        return self.path(key)

    def read(self, key: AttachmentKey) -> CacheEntry | None:
        """The cached attachment, None if there is none; CacheError if the file is unusable."""
        path = self.path(key)
        with open_subdir(self.directory, RESULTS_SUBDIR) as directory:
            if directory is None:
                return None
            try:
                data = read_regular_at(directory, key.file_name)
            except NotARegularFile as exc:
                raise CacheError(path, exc.strerror) from None
        if data is None:
            return None
        return _parse(path, data, key)

    def delete(self, key: AttachmentKey) -> bool:
        with open_subdir(self.directory, RESULTS_SUBDIR) as directory:
            return directory is not None and remove_written_file_at(directory, key.file_name)

    def entries(self, network: str | None = None) -> CacheListing:
        """All usable cniCacheV1 entries (optionally of one network) and the CacheErrors of the
        files that could not be used (of every network: a file's network cannot be told from
        its name alone)."""
        entries, problems = [], []
        with open_subdir(self.directory, RESULTS_SUBDIR) as directory:
            for name in sorted(os.listdir(directory)) if directory is not None else []:
                if name.startswith("."):
                    continue  # our own in-flight temporary files
                path = os.path.join(self.directory, RESULTS_SUBDIR, name)
                try:
                    entry = _parse(path, read_regular_at(directory, name) or b"")
                except NotARegularFile:
                    continue  # a symlink, a directory: not an entry, and never followed
                except CacheError as exc:
                    problems.append(exc)
                    continue
                if entry.config is not None and (network is None or entry.network == network):
                    entries.append(entry)
        return CacheListing(entries, problems)

    # -- intent markers ----------------------------------------------------------------------

    def mark_pending(self, key: AttachmentKey) -> None:
        """Record that an ADD is starting, so a run killed half-way is known to the next one."""
        # Not fsynced: a killed run leaves the file in the page cache, which the next run reads. After
        # a power loss the namespace is gone, and what the marker stands for is on disk only if the
        # plugins' own files are (host-local's reservation, written after the marker and never
        # fsynced): a journalling file system commits the marker's creation with or before them. An
        # fsync here cost every ADD a journal commit, a millisecond or more.
        with contextlib.ExitStack() as stack:
            _directory, fd = _create_in_subdir(self.directory, PENDING_SUBDIR, key.file_name,
                                               os.O_WRONLY | os.O_TRUNC, stack)
            os.fchmod(fd, 0o600)

    def pending_marker(self, key: AttachmentKey) -> str:
        """The path of the attachment's intent marker (named as its cache entry)."""
        return os.path.join(self.directory, PENDING_SUBDIR, key.file_name)

    def clear_pending(self, key: AttachmentKey) -> None:
        """Remove the marker; its directory stays for the next ADD (:meth:`tidy` removes it once
        empty)."""
        with open_subdir(self.directory, PENDING_SUBDIR) as directory:
            if directory is not None:
                remove_if_exists(key.file_name, directory)

    def is_pending(self, key: AttachmentKey) -> bool:
        with open_subdir(self.directory, PENDING_SUBDIR) as directory:
            if directory is None:
                return False
            try:
                os.stat(key.file_name, dir_fd=directory, follow_symlinks=False)
            except FileNotFoundError:
                return False
        return True

    def unfinished_adds(self, entries: list) -> list:
        """The intent markers (paths, sorted) of ADDs that neither finished nor were rolled back:
        their plugins may have left an interface, an address or rules. ``entries`` are the usable
        cache entries; a marker beside a complete one is of an ADD that did finish."""
        finished = {os.path.basename(entry.path) for entry in entries if entry.result is not None}
        with open_subdir(self.directory, PENDING_SUBDIR) as directory:
            names = sorted(os.listdir(directory)) if directory is not None else []
        return [os.path.join(self.directory, PENDING_SUBDIR, name) for name in names if name not in finished]

    # -- locks -------------------------------------------------------------------------------

    def lock(self, key: AttachmentKey):
        """Serialise operations on one attachment, and keep GC of its network out meanwhile."""
        return _file_locks(self.directory, (_network_lock_name(key.network), True),
                           (_stripe_lock_name("attachment", key.network, key.container_id, key.ifname), False))

    def lock_interface(self, netns: str, ifname: str):
        """Serialise the ADDs that create ``ifname`` in ``netns``, whatever their network, so that
        checking the name is free and creating it are one step."""
        return _file_locks(self.directory, (_stripe_lock_name("interface", netns, ifname), False))

    def lock_for_gc(self, network: str):
        """Exclusive against every ADD/DEL/CHECK of ``network`` (the spec's GC rule)."""
        check_network_name(network, "network")
        return _file_locks(self.directory, (_network_lock_name(network), False))

    def tidy(self) -> None:
        """Delete the lock files nobody holds, and the lock and intent-marker directories once
        empty, so that a host whose attachments are all gone keeps no trace of ours. The verbs
        leave them for the next verb: a caller tidies once, when its work is done (creating and
        deleting them around every verb cost each ADD+DEL about 1.5 ms of file system work).
        Only names this collection gives its lock files are deleted: whatever else the directory
        holds is someone else's. A process that opened a lock file just before it was deleted
        sees so once it holds the lock, and opens the file anew (:func:`_file_locks`)."""
        with open_subdir(self.directory, LOCKS_SUBDIR) as directory:
            for name in os.listdir(directory) if directory is not None else []:
                if _is_lock_name(name):
                    remove_if_unlocked(directory, name)
        _remove_dir_if_empty(os.path.join(self.directory, LOCKS_SUBDIR))
        _remove_dir_if_empty(os.path.join(self.directory, PENDING_SUBDIR))


# The one place lock file names are made, and recognised: network-<network name>.lock, and
# <kind>-<stripe, three digits>.lock for the striped kinds.

def _lock_name(kind: str, label: str) -> str:
    return f"{kind}-{label}{LOCK_SUFFIX}"


def _network_lock_name(network: str) -> str:
    return _lock_name("network", network)


def _stripe_lock_name(kind: str, *parts: str) -> str:
    stripe = int(hashlib.sha256("\0".join(parts).encode()).hexdigest(), 16) % LOCK_STRIPES
    return _lock_name(kind, f"{stripe:03d}")


def _is_lock_name(name: str) -> bool:
    kind, _dash, rest = name.partition("-")
    label = rest[:-len(LOCK_SUFFIX)]
    if name != _lock_name(kind, label):
        return False
    if kind == "network":
        return bool(ID_PATTERN.match(label))
    return kind in STRIPED_LOCK_KINDS and len(label) == 3 and label.isascii() and label.isdigit() \
        and int(label) < LOCK_STRIPES


@contextlib.contextmanager
def _file_locks(cache_dir: str, *locks: tuple):
    """Hold the flocks of lock files ``(name, shared)``, taken in this order, with the lock
    directory opened (and checked) once. A file that :meth:`ResultCache.tidy` deleted
    between our open and our flock is no lock any more (st_nlink 0): open it anew."""
    with contextlib.ExitStack() as stack:
        directory = None
        for name, shared in locks:
            for _attempt in range(LOCK_ATTEMPTS):
                directory, fd = _create_in_subdir(cache_dir, LOCKS_SUBDIR, name, os.O_RDWR, stack, directory)
                fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
                if os.fstat(fd).st_nlink:
                    break
            else:
                raise ConfigError("cache_dir", f"lock file {os.path.join(cache_dir, LOCKS_SUBDIR, name)} was "
                                  f"removed under us {LOCK_ATTEMPTS} times", cache_dir)
        yield


def _create_in_subdir(cache_dir: str, subdir: str, name: str, flags: int, stack: contextlib.ExitStack,
                      directory: int | None = None) -> tuple:
    """Open (creating it, 0600) file ``name`` of ``cache_dir/subdir``, never through a symlink;
    return ``(directory descriptor, file descriptor)``, both closed by ``stack``. The directory
    may be removed by a concurrent clean-up while empty, so it is opened anew."""
    path = os.path.join(cache_dir, subdir, name)
    for _attempt in range(LOCK_ATTEMPTS):
        if directory is None:
            directory = stack.enter_context(open_subdir(cache_dir, subdir, create=True))
        try:
            fd = os.open(name, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=directory)
        except FileNotFoundError:
            directory = None  # removed since we opened it
            continue
        except OSError as exc:
            reason = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
            raise ConfigError("cache_dir", f"cannot use {path} ({reason})", cache_dir) from None
        stack.callback(os.close, fd)
        return directory, fd
    raise ConfigError("cache_dir", f"{os.path.dirname(path)} was removed under us {LOCK_ATTEMPTS} times", cache_dir)


def _remove_dir_if_empty(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.ENOTDIR, errno.EBUSY):
            raise
