# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The result cache, in libcni's exact layout and format so that cnitool, containerd and cri-o
read ours and we read theirs: ``<cache_dir>/results/<network>-<container id>-<ifname>``, one
compact JSON object of kind ``cniCacheV1``. Unlike libcni, entries are written atomically and
read tolerantly, and attachments are serialised with locks."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field

from ._errors import CNIError, ConfigError
from ._fileio import atomic_write, ensure_dir, file_lock, fsync_dir, read_if_exists, remove_if_exists, remove_written_file
from ._identifiers import MAX_NAME_BYTES, check_container_id, check_ifname, check_network_name

KIND = "cniCacheV1"
RESULTS_SUBDIR = "results"
LOCKS_SUBDIR = "cnikit-locks"  # ours, beside libcni's results/
PENDING_SUBDIR = "cnikit-pending"  # intent markers of ADDs in progress
LOCK_STRIPES = 256  # attachment locks are striped so lock files never accumulate


class CacheError(CNIError):
    """A cache file that exists but cannot be used (empty, truncated, not JSON, wrong shape)."""

    def __init__(self, path: str, reason: str):
        self.path = path
        super().__init__(f"unusable cache file {path}: {reason}")


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
        return json.dumps(data, separators=(",", ":")).encode()


def _sorted(value: dict) -> dict:
    return json.loads(json.dumps(value, sort_keys=True))


def entry_path(cache_dir: str, network: str, container_id: str, ifname: str) -> str:
    """The entry's path, after checking each part so nothing outside ``cache_dir`` is reachable."""
    check_network_name(network, "network")
    check_container_id(container_id)
    check_ifname(ifname)
    name = f"{network}-{container_id}-{ifname}"
    if len(name.encode()) > MAX_NAME_BYTES:
        raise ConfigError("container_id", f"network name, container ID and ifname together exceed {MAX_NAME_BYTES} bytes", name)
    return os.path.join(cache_dir, RESULTS_SUBDIR, name)


def write_entry(cache_dir: str, entry: CacheEntry) -> str:
    path = entry_path(cache_dir, entry.network, entry.container_id, entry.ifname)
    ensure_dir(cache_dir, 0o700)
    ensure_dir(os.path.dirname(path), 0o700)
    atomic_write(path, entry.to_json(), mode=0o600)
    return path


def _parse(path: str, data: bytes, network: str = "", container_id: str = "", ifname: str = "") -> CacheEntry:
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
        # libcni's legacy format: the bare result.
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
    return CacheEntry(raw["networkName"], raw["containerId"], raw["ifName"], config=config,
                      netns=str(raw.get("netns") or ""), cni_args=args, capability_args=caps,
                      result=result, path=path)


def read_entry(cache_dir: str, network: str, container_id: str, ifname: str) -> CacheEntry | None:
    """The cached attachment, None if there is none; CacheError if the file is unusable."""
    path = entry_path(cache_dir, network, container_id, ifname)
    data = read_if_exists(path)
    if data is None:
        return None
    return _parse(path, data, network, container_id, ifname)


def delete_entry(cache_dir: str, network: str, container_id: str, ifname: str) -> bool:
    return remove_written_file(entry_path(cache_dir, network, container_id, ifname))


def _pending_path(cache_dir: str, network: str, container_id: str, ifname: str) -> str:
    return os.path.join(cache_dir, PENDING_SUBDIR, os.path.basename(entry_path(cache_dir, network, container_id, ifname)))


def mark_pending(cache_dir: str, network: str, container_id: str, ifname: str) -> None:
    """Record that an ADD is starting, so a run killed half-way is known to the next one."""
    path = _pending_path(cache_dir, network, container_id, ifname)
    ensure_dir(cache_dir, 0o700)
    ensure_dir(os.path.dirname(path), 0o700)
    # An empty file has no content to replace atomically: creating it and making its directory
    # entry durable is enough, and saves atomic_write's rename and second fsync on every ADD.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    fsync_dir(os.path.dirname(path))


def clear_pending(cache_dir: str, network: str, container_id: str, ifname: str) -> None:
    remove_if_exists(_pending_path(cache_dir, network, container_id, ifname))


def is_pending(cache_dir: str, network: str, container_id: str, ifname: str) -> bool:
    return os.path.exists(_pending_path(cache_dir, network, container_id, ifname))


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
def attachment_lock(cache_dir: str, network: str, container_id: str, ifname: str):
    """Serialise operations on one attachment, and keep GC of its network out meanwhile."""
    check_network_name(network, "network")
    stripe = int(hashlib.sha256(f"{network}\0{container_id}\0{ifname}".encode()).hexdigest(), 16) % LOCK_STRIPES
    with file_lock(_lock_path(cache_dir, f"network-{network}.lock"), shared=True):
        with file_lock(_lock_path(cache_dir, f"attachment-{stripe:03d}.lock")):
            yield


@contextlib.contextmanager
def network_gc_lock(cache_dir: str, network: str):
    """Exclusive against every ADD/DEL/CHECK of ``network`` (the spec's GC rule)."""
    check_network_name(network, "network")
    with file_lock(_lock_path(cache_dir, f"network-{network}.lock")):
        yield


def _lock_path(cache_dir: str, name: str) -> str:
    """The lock file ``name``, created if missing. A cache dir that cannot hold it (read-only,
    not a directory) is a ConfigError naming ``cache_dir``, not an OSError escaping a module."""
    directory = os.path.join(cache_dir, LOCKS_SUBDIR)
    path = os.path.join(directory, name)
    try:
        ensure_dir(cache_dir, 0o700)
        ensure_dir(directory, 0o700)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
    except OSError as exc:
        raise ConfigError("cache_dir", f"cannot create lock files in {directory} ({exc.strerror}: {exc.filename})",
                          cache_dir) from None
    return path
