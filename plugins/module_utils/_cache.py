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

from ._errors import CNIError, ConfigError
from ._fileio import (
    atomic_write, ensure_dir, fsync_dir, read_if_exists, remove_if_exists, remove_if_unlocked, remove_written_file,
)
from ._identifiers import AttachmentKey, check_network_name

KIND = "cniCacheV1"
RESULTS_SUBDIR = "results"
LOCKS_SUBDIR = "cnikit-locks"  # ours, beside libcni's results/
PENDING_SUBDIR = "cnikit-pending"  # intent markers of ADDs in progress
LOCK_STRIPES = 256  # attachment locks are striped so lock files never accumulate
LOCK_ATTEMPTS = 20  # a lock file removed by an idle sweep is opened anew, this many times at most
OWNER_KEY = "cnikit"  # the member that marks an entry as written by this collection


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
        return {"network": self.network, "container_id": self.container_id, "ifname": self.ifname,
                "netns": self.effective_netns, "managed": self.managed}

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


def entry_path(cache_dir: str, key: AttachmentKey) -> str:
    return os.path.join(cache_dir, RESULTS_SUBDIR, key.file_name)


def write_entry(cache_dir: str, entry: CacheEntry) -> str:
    path = entry_path(cache_dir, entry.key)
    ensure_dir(cache_dir, 0o700)
    ensure_dir(os.path.dirname(path), 0o700)
    atomic_write(path, entry.to_json(), mode=0o600)
    return path


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


def read_entry(cache_dir: str, key: AttachmentKey) -> CacheEntry | None:
    """The cached attachment, None if there is none; CacheError if the file is unusable."""
    path = entry_path(cache_dir, key)
    data = read_if_exists(path)
    if data is None:
        return None
    return _parse(path, data, key)


def delete_entry(cache_dir: str, key: AttachmentKey) -> bool:
    return remove_written_file(entry_path(cache_dir, key))


def _pending_path(cache_dir: str, key: AttachmentKey) -> str:
    return os.path.join(cache_dir, PENDING_SUBDIR, key.file_name)


def mark_pending(cache_dir: str, key: AttachmentKey) -> None:
    """Record that an ADD is starting, so a run killed half-way is known to the next one."""
    path = _pending_path(cache_dir, key)
    # An empty file has no content to replace atomically: creating it and making its directory
    # entry durable is enough, and saves atomic_write's rename and second fsync on every ADD.
    fd = _open_in_own_dir(cache_dir, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    fsync_dir(os.path.dirname(path))


def clear_pending(cache_dir: str, key: AttachmentKey) -> None:
    path = _pending_path(cache_dir, key)
    if remove_if_exists(path):
        _remove_dir_if_empty(os.path.dirname(path))


def is_pending(cache_dir: str, key: AttachmentKey) -> bool:
    return os.path.exists(_pending_path(cache_dir, key))


def list_entries(cache_dir: str, network: str | None = None) -> tuple:
    """All usable cniCacheV1 entries (optionally of one network), sorted by file name, and the
    CacheErrors of the files that could not be used."""
    directory = os.path.join(cache_dir, RESULTS_SUBDIR)
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return [], []
    entries, problems = [], []
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(".") or not os.path.isfile(path):
            continue  # our own in-flight temporary files, and anything that is not an entry
        try:
            entry = _parse(path, read_if_exists(path) or b"")
        except CacheError as exc:
            problems.append(exc)
            continue
        if entry.config is not None and (network is None or entry.network == network):
            entries.append(entry)
    return entries, problems


@contextlib.contextmanager
def attachment_lock(cache_dir: str, key: AttachmentKey):
    """Serialise operations on one attachment, and keep GC of its network out meanwhile."""
    with _file_lock(cache_dir, _network_lock_name(key.network), shared=True):
        with _file_lock(cache_dir, _stripe_lock_name("attachment", key.network, key.container_id, key.ifname)):
            yield


@contextlib.contextmanager
def interface_lock(cache_dir: str, netns: str, ifname: str):
    """Serialise the ADDs that create ``ifname`` in ``netns``, whatever their network, so that
    checking the name is free and creating it are one step."""
    with _file_lock(cache_dir, _stripe_lock_name("interface", netns, ifname)):
        yield


@contextlib.contextmanager
def network_gc_lock(cache_dir: str, network: str):
    """Exclusive against every ADD/DEL/CHECK of ``network`` (the spec's GC rule)."""
    check_network_name(network, "network")
    with _file_lock(cache_dir, _network_lock_name(network)):
        yield


def remove_idle_lock_files(cache_dir: str) -> None:
    """Delete the lock files nobody holds, and the lock and intent-marker directories once
    empty, so that a host whose attachments are all gone keeps no trace of ours. A process that
    opened a lock file just before it was deleted sees so once it holds the lock, and opens the
    file anew (:func:`_file_lock`)."""
    directory = os.path.join(cache_dir, LOCKS_SUBDIR)
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        names = []
    for name in names:
        remove_if_unlocked(os.path.join(directory, name))
    _remove_dir_if_empty(directory)
    _remove_dir_if_empty(os.path.join(cache_dir, PENDING_SUBDIR))


def _network_lock_name(network: str) -> str:
    return f"network-{network}.lock"


def _stripe_lock_name(kind: str, *parts: str) -> str:
    stripe = int(hashlib.sha256("\0".join(parts).encode()).hexdigest(), 16) % LOCK_STRIPES
    return f"{kind}-{stripe:03d}.lock"


@contextlib.contextmanager
def _file_lock(cache_dir: str, name: str, shared: bool = False):
    """Hold the flock of lock file ``name``. A file that :func:`remove_idle_lock_files` deleted
    between our open and our flock is no lock any more (st_nlink 0): open it anew."""
    path = os.path.join(cache_dir, LOCKS_SUBDIR, name)
    for _attempt in range(LOCK_ATTEMPTS):
        fd = _open_in_own_dir(cache_dir, path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, what="lock files")
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink:
            break
        os.close(fd)
    else:
        raise ConfigError("cache_dir", f"lock file {path} was removed under us {LOCK_ATTEMPTS} times", cache_dir)
    try:
        yield
    finally:
        os.close(fd)


def _open_in_own_dir(cache_dir: str, path: str, flags: int, what: str = "files") -> int:
    """Open ``path`` (mode 0600) in its subdirectory of ``cache_dir``, creating both as needed;
    the subdirectory may be removed by a concurrent cleanup while empty, so it is made anew. A
    cache dir that cannot hold it (read-only, not a directory) is a ConfigError naming
    ``cache_dir``, not an OSError escaping a module."""
    directory = os.path.dirname(path)
    for _attempt in range(LOCK_ATTEMPTS):
        try:
            ensure_dir(cache_dir, 0o700)
            ensure_dir(directory, 0o700)
            return os.open(path, flags, 0o600)
        except FileNotFoundError:
            continue  # the directory was removed between ensure_dir and open
        except OSError as exc:
            raise ConfigError("cache_dir", f"cannot create {what} in {directory} ({exc.strerror}: {exc.filename})",
                              cache_dir) from None
    raise ConfigError("cache_dir", f"{directory} was removed under us {LOCK_ATTEMPTS} times", cache_dir)


def _remove_dir_if_empty(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.ENOTDIR, errno.EBUSY):
            raise
