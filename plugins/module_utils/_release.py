# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Installing CNI plugin binaries: release URLs, a streamed download with a size cap, checksum
verification, tarball member checks, a plan of what changes, a staged install where every binary
answers VERSION before it replaces the old one, and a manifest that makes re-runs free and
upgrades clean. Downloads go through a ``fetch(url) -> readable`` callable given by the caller,
so the module can use Ansible's proxy and certificate handling and tests can use urllib."""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import http.client
import json
import math
import os
import re
import shutil
import stat
import sys
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ._errors import CNIError, ConfigError
from ._exec import probe_versions
from ._fileio import atomic_write, ensure_dir, fsync_dir, read_if_exists, remove_if_exists, remove_written_file

DEFAULT_BASE_URL = "https://github.com/containernetworking/plugins/releases/download"
DEFAULT_DEST = "/opt/cni/bin"
MANIFEST_NAME = ".cnikit-manifest.json"
MANIFEST_FORMAT = 1
STAGE_PREFIX = ".cnikit-stage-"
BINARY_MODE = 0o755
DIGESTS = ("sha256", "sha512")
CHUNK = 1 << 20

# platform.machine() -> release arch. mips64 needs the byte order: only little-endian is released.
ARCH_BY_MACHINE = {
    "x86_64": "amd64", "amd64": "amd64",
    "aarch64": "arm64", "arm64": "arm64",
    "armv6l": "arm", "armv7l": "arm", "armv8l": "arm",
    "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64",
}
RELEASE_ARCHES = ("amd64", "arm", "arm64", "mips64le", "ppc64le", "riscv64", "s390x")

VERSION_RE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.-]+)?$")
PLUGIN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Release extras that are documentation, not plugins: never installed into dest.
EXTRA_RE = re.compile(r"^(?:LICENSE|NOTICE|README)(?:\..*)?$|\.(?:md|txt)$", re.IGNORECASE)


class ReleaseError(CNIError):
    """A source that cannot be used: download failure, checksum mismatch, unsafe tarball."""


@dataclass(frozen=True)
class Limits:
    """Size caps, in bytes. The largest real release (v1.9.1 amd64) is about 50 MB packed and
    under 250 MB unpacked; the caps only stop runaway or hostile input."""

    download: int = 512 << 20
    member: int = 256 << 20
    total: int = 1 << 30
    checksum_file: int = 64 << 10


# --- names, versions, URLs -------------------------------------------------------------------

def host_arch(machine: str, byteorder: str = sys.byteorder) -> str:
    """The release arch for a ``platform.machine()`` value."""
    if machine == "mips64" and byteorder == "little":
        return "mips64le"
    if machine in ARCH_BY_MACHINE:
        return ARCH_BY_MACHINE[machine]
    raise ConfigError("arch", f"no CNI plugins release for machine type {machine!r}; set arch to one of "
                      + ", ".join(RELEASE_ARCHES))


def normalize_version(version: str) -> str:
    """``v1.9.1`` or ``1.9.1`` -> ``1.9.1``."""
    text = str(version).strip()
    bare = text[1:] if text[:1] in ("v", "V") else text
    if not VERSION_RE.match(bare):
        raise ConfigError("version", "must be a release version such as 1.9.1 or v1.9.1", version)
    return bare


def tarball_name(version: str, arch: str) -> str:
    return f"cni-plugins-linux-{arch}-v{version}.tgz"


def release_url(base_url: str, version: str, arch: str) -> str:
    """Where the upstream release (or a mirror with the same layout) keeps the tarball."""
    return f"{base_url.rstrip('/')}/v{version}/{tarball_name(version, arch)}"


def mask_url(url: str) -> str:
    """The URL without its user:password, fit for messages and return values."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def url_password(url: str) -> str | None:
    """The password embedded in a URL, so the caller can keep it out of logs."""
    return urlsplit(url).password


# --- checksums -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Checksum:
    """``sha256:<hex>`` (pinned) or ``sha256:<url>`` (a checksum file to fetch)."""

    algorithm: str
    hexdigest: str | None = None
    url: str | None = None

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.hexdigest or mask_url(self.url or '')}"


def parse_checksum(spec: str) -> Checksum:
    given, sep, value = str(spec).partition(":")
    algorithm = given.strip().lower()
    value = value.strip()
    if not sep or algorithm not in DIGESTS or not value:
        raise ConfigError("checksum", "must be sha256:<hex>, sha512:<hex>, sha256:<url> or sha512:<url>",
                          f"{given}{sep}{mask_url(value)}")
    if "://" in value:
        return Checksum(algorithm, url=value)
    return Checksum(algorithm, hexdigest=_valid_hex(value, algorithm, "checksum"))


def _valid_hex(value: str, algorithm: str, path: str) -> str:
    length = hashlib.new(algorithm).digest_size * 2
    if not re.fullmatch(rf"[0-9a-fA-F]{{{length}}}", value):
        raise ConfigError(path, f"not a {algorithm} digest ({length} hex digits)", value)
    return value.lower()


def parse_checksum_file(data: bytes, filename: str, algorithm: str, origin: str) -> str:
    """The digest for ``filename`` from ``sha256sum``-format text: the line naming it, or the
    only line there is (the release's files hold one line each)."""
    lines = [line.split() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    named = [fields[0] for fields in lines if len(fields) > 1 and fields[1].lstrip("*") == filename]
    if named:
        return _valid_hex(named[0], algorithm, origin)
    if len(lines) == 1:
        return _valid_hex(lines[0][0], algorithm, origin)
    raise ReleaseError(f"{origin}: no {algorithm} digest for {filename} in the checksum file")


# --- reading sources -----------------------------------------------------------------------

def _read_capped(readable, limit: float, sink, what: str) -> None:
    """Copy ``readable`` into ``sink`` (a callable taking chunks), failing past ``limit`` bytes."""
    seen = 0
    while True:
        chunk = readable.read(CHUNK)
        if not chunk:
            return
        seen += len(chunk)
        if seen > limit:
            raise ReleaseError(f"{what} is larger than the limit of {limit} bytes")
        sink(chunk)


def download(fetch, url: str, directory: str, limits: Limits = Limits()) -> tuple:
    """Stream ``url`` into a new file in ``directory``; return (path, {algorithm: hexdigest})."""
    hashers = {name: hashlib.new(name) for name in DIGESTS}
    fd, path = tempfile.mkstemp(prefix="cni-plugins-", suffix=".tgz", dir=directory)
    with os.fdopen(fd, "wb") as handle:
        def sink(chunk):
            handle.write(chunk)
            for hasher in hashers.values():
                hasher.update(chunk)
        try:
            with contextlib.closing(fetch(url)) as response:
                _read_capped(response, limits.download, sink, mask_url(url))
        except (OSError, http.client.HTTPException) as exc:
            raise ReleaseError(f"download of {mask_url(url)} failed: {exc}") from exc
    return path, {name: hasher.hexdigest() for name, hasher in hashers.items()}


def fetch_checksum(fetch, checksum: Checksum, filename: str, limits: Limits = Limits()) -> str:
    parts = []
    try:
        with contextlib.closing(fetch(checksum.url)) as response:
            _read_capped(response, limits.checksum_file, parts.append, mask_url(checksum.url))
    except (OSError, http.client.HTTPException) as exc:
        raise ReleaseError(f"download of {mask_url(checksum.url)} failed: {exc}") from exc
    return parse_checksum_file(b"".join(parts), filename, checksum.algorithm, mask_url(checksum.url))


def verify_digest(actual: dict, algorithm: str, expected: str, what: str) -> None:
    if actual[algorithm] != expected:
        raise ReleaseError(f"checksum mismatch for {what}: expected {algorithm}:{expected}, "
                           f"got {algorithm}:{actual[algorithm]}")


def file_digests(path: str) -> dict:
    hashers = {name: hashlib.new(name) for name in DIGESTS}
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            for hasher in hashers.values():
                hasher.update(chunk)
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def _member_name(member: tarfile.TarInfo, what: str) -> str | None:
    """The plugin file name of a safe member; None for the root directory entry."""
    name = member.name
    stripped = name[2:] if name.startswith("./") else name
    if name.startswith("/"):
        raise ReleaseError(f"unsafe tarball {what}: member {name!r} has an absolute path")
    if ".." in name.split("/"):
        raise ReleaseError(f"unsafe tarball {what}: member {name!r} contains '..'")
    if member.isdir():
        if stripped.strip("/") in ("", "."):
            return None
        raise ReleaseError(f"unsupported tarball {what}: member {name!r} is a subdirectory; "
                           "release tarballs are flat")
    if not member.isreg():
        kind = "a link" if member.issym() or member.islnk() else "a device, fifo or other special file"
        raise ReleaseError(f"unsafe tarball {what}: member {name!r} is {kind}")
    if member.mode & (stat.S_ISUID | stat.S_ISGID):
        raise ReleaseError(f"unsafe tarball {what}: member {name!r} has the setuid or setgid bit")
    if "/" in stripped or not PLUGIN_NAME_RE.match(stripped):
        raise ReleaseError(f"unsupported tarball {what}: member {name!r} is not a plain file name")
    return stripped


class TarballSource:
    """A checked tarball: in one pass every member is checked, and each binary is hashed and
    unpacked into ``workdir`` (never dest), from where the install copies it."""

    def __init__(self, path: str, what: str, workdir: str, limits: Limits = Limits()):
        self.what = what
        self.files = {}  # plugin name -> sha256 (binaries only)
        self.extras = []
        self._unpacked = tempfile.mkdtemp(prefix="unpacked-", dir=workdir)
        total = 0
        try:
            with tarfile.open(path, "r:*") as archive:
                for member in archive:
                    name = _member_name(member, what)
                    if name is None:
                        continue
                    if member.size > limits.member:
                        raise ReleaseError(f"tarball {what}: member {member.name!r} is {member.size} bytes, "
                                           f"over the limit of {limits.member}")
                    total += member.size
                    if total > limits.total:
                        raise ReleaseError(f"tarball {what}: members add up to more than {limits.total} bytes")
                    if name in self.files or name in self.extras:
                        raise ReleaseError(f"tarball {what}: member {member.name!r} appears twice")
                    if EXTRA_RE.search(name):
                        self.extras.append(name)
                        continue
                    self.files[name] = _copy_hashed(archive.extractfile(member), os.path.join(self._unpacked, name),
                                                    member.name, limits.member)
        except (tarfile.TarError, gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise ReleaseError(f"{what} is not a readable tar archive: {exc}") from exc
        if not self.files:
            raise ReleaseError(f"tarball {what} holds no plugin binaries")

    def open(self, name: str):
        return open(os.path.join(self._unpacked, name), "rb")


def _copy_hashed(readable, path: str, what: str, limit: float = math.inf) -> str:
    """Copy into a new file at ``path``; return the sha256 of what was written."""
    hasher = hashlib.sha256()
    with open(path, "xb") as handle:
        def sink(chunk):
            handle.write(chunk)
            hasher.update(chunk)
        _read_capped(readable, limit, sink, what)
        handle.flush()
        os.fsync(handle.fileno())
    return hasher.hexdigest()


class DirectorySource:
    """Executable regular files of a directory, e.g. a distro package's /usr/lib/cni."""

    def __init__(self, path: str):
        if not os.path.isdir(path):
            raise ConfigError("src_dir", "is not a directory", path)
        self.path = path
        self.what = path
        self.files = {}
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            if os.path.isfile(full) and os.access(full, os.X_OK) and PLUGIN_NAME_RE.match(name) \
                    and not EXTRA_RE.search(name):
                self.files[name] = file_digests(full)["sha256"]
        if not self.files:
            raise ConfigError("src_dir", "holds no executable plugin binaries", path)

    def digest(self) -> str:
        """One sha256 over the sorted (name, sha256) pairs: the directory's content identity."""
        text = "".join(f"{digest}  {name}\n" for name, digest in sorted(self.files.items()))
        return hashlib.sha256(text.encode()).hexdigest()

    def open(self, name: str):
        return open(os.path.join(self.path, name), "rb")


# --- what is installed -----------------------------------------------------------------------

def manifest_path(dest: str) -> str:
    return os.path.join(dest, MANIFEST_NAME)


def read_manifest(dest: str) -> dict | None:
    data = read_if_exists(manifest_path(dest))
    if data is None:
        return None
    try:
        manifest = json.loads(data)
    except ValueError as exc:
        raise ReleaseError(f"{manifest_path(dest)} is not valid JSON ({exc}); remove it to start over") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT \
            or not isinstance(manifest.get("files"), dict):
        raise ReleaseError(f"{manifest_path(dest)} is not a format {MANIFEST_FORMAT} cnikit manifest; "
                           "remove it to start over")
    for name in manifest["files"]:
        if not isinstance(name, str) or not PLUGIN_NAME_RE.match(name):
            raise ReleaseError(f"{manifest_path(dest)} lists a file name that is not a plugin name: {name!r}")
    return manifest


def _want_owner() -> int | None:
    """Root-owned binaries when we run as root; an unprivileged run keeps its own uid."""
    return 0 if os.geteuid() == 0 else None


def installed_matches(dest: str, name: str, sha256: str) -> bool:
    """Is ``dest/name`` a regular file (not a link) with this content, mode 0755 and right owner?"""
    path = os.path.join(dest, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    owner = _want_owner()
    if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != BINARY_MODE \
            or (owner is not None and (st.st_uid, st.st_gid) != (owner, owner)):
        return False
    return file_digests(path)["sha256"] == sha256


@dataclass(frozen=True)
class Request:
    """What the caller asks for, in the terms the manifest records."""

    source: str                      # masked URL or absolute path
    version: str | None
    plugins: tuple | None = None     # None: every binary the source holds
    checksum: Checksum | None = None


def manifest_is_current(manifest: dict | None, request: Request, dest: str) -> bool:
    """True when the manifest records this very request and every file it lists is intact:
    then nothing needs to be fetched."""
    if not manifest or manifest.get("source") != request.source or manifest.get("version") != request.version:
        return False
    if manifest.get("plugins") != (list(request.plugins) if request.plugins is not None else None):
        return False
    pinned = request.checksum
    if pinned and pinned.hexdigest and manifest.get("tarball", {}).get(pinned.algorithm) != pinned.hexdigest:
        return False
    return all(installed_matches(dest, name, digest) for name, digest in manifest["files"].items())


# --- plans -----------------------------------------------------------------------------------

@dataclass
class Plan:
    dest: str
    old_manifest: dict | None
    new_manifest: dict | None
    install: list = field(default_factory=list)
    update: list = field(default_factory=list)
    remove: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.install or self.update or self.remove) or self.old_manifest != self.new_manifest


def select_plugins(available: dict, plugins: tuple | None, what: str) -> dict:
    if plugins is None:
        return dict(available)
    missing = sorted(set(plugins) - set(available))
    if missing:
        raise ConfigError("plugins", f"not in {what}, which holds {', '.join(sorted(available))}", missing)
    return {name: available[name] for name in plugins}


def plan_present(dest: str, old_manifest: dict | None, request: Request, source, tarball: dict,
                 force: bool = False) -> Plan:
    """Compare the source's selected binaries with dest and the manifest."""
    wanted = select_plugins(source.files, request.plugins, source.what)
    new_manifest = {
        "format": MANIFEST_FORMAT,
        "version": request.version,
        "source": request.source,
        "tarball": tarball,
        "plugins": list(request.plugins) if request.plugins is not None else None,
        "files": dict(sorted(wanted.items())),
    }
    plan = Plan(dest, old_manifest, new_manifest)
    for name, digest in sorted(wanted.items()):
        if not os.path.lexists(os.path.join(dest, name)):
            plan.install.append(name)
        elif force or not installed_matches(dest, name, digest):
            plan.update.append(name)
    previous = old_manifest["files"] if old_manifest else {}
    plan.remove = sorted(name for name in previous
                         if name not in wanted and os.path.lexists(os.path.join(dest, name)))
    return plan


def plan_absent(dest: str, old_manifest: dict | None, plugins: tuple | None) -> Plan:
    """Remove what the manifest says we installed (all of it, or the listed plugins); never a
    file we did not install."""
    if not old_manifest:
        return Plan(dest, None, None)
    names = set(old_manifest["files"]) if plugins is None else set(plugins) & set(old_manifest["files"])
    remaining = {n: d for n, d in old_manifest["files"].items() if n not in names}
    new_manifest = dict(old_manifest, files=remaining) if remaining else None
    plan = Plan(dest, old_manifest, new_manifest)
    plan.remove = sorted(n for n in names if os.path.lexists(os.path.join(dest, n)))
    return plan


# --- doing it --------------------------------------------------------------------------------

def _stage_one(source, name: str, expected: str, stage: str, timeout: float) -> list:
    """Write one binary into the staging directory, check its digest, and ask it VERSION."""
    path = os.path.join(stage, name)
    with source.open(name) as handle:
        if _copy_hashed(handle, path, name) != expected:
            raise ReleaseError(f"{source.what}: {name} changed while it was being installed")
    os.chmod(path, BINARY_MODE)
    owner = _want_owner()
    if owner is not None:
        os.chown(path, owner, owner)
    return probe_versions(path, timeout)


@contextlib.contextmanager
def _staging(dest: str):
    """A staging directory inside dest, flocked while this install uses it: a process killed
    mid-install (SIGKILL skips the clean-up) releases the lock, which marks its stage abandoned."""
    stage = tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=dest)
    fd = os.open(stage, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        os.close(fd)


def _remove_abandoned_stages(dest: str) -> None:
    """Remove the stages of killed installs; a stage still locked belongs to a running one."""
    for name in os.listdir(dest):
        path = os.path.join(dest, name)
        if not name.startswith(STAGE_PREFIX) or os.path.islink(path) or not os.path.isdir(path):
            continue
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(path, ignore_errors=True)
        except BlockingIOError:
            pass  # a running install's stage
        finally:
            os.close(fd)


def apply(plan: Plan, source, timeout: float) -> dict:
    """Carry out ``plan``; return {name: supported CNI versions} of the binaries written.

    Every binary is staged in a directory inside dest (same filesystem) and answers VERSION
    before the first rename, so a bad release leaves dest as it was."""
    dest = plan.dest
    versions = {}
    if os.path.isdir(dest):
        _remove_abandoned_stages(dest)
    if plan.install or plan.update:
        ensure_dir(dest, BINARY_MODE)
        with _staging(dest) as stage:
            files = plan.new_manifest["files"]
            for name in plan.install + plan.update:
                versions[name] = _stage_one(source, name, files[name], stage, timeout)
            for name in plan.install + plan.update:
                os.replace(os.path.join(stage, name), os.path.join(dest, name))
    for name in plan.remove:
        remove_if_exists(os.path.join(dest, name))
    if os.path.isdir(dest):
        fsync_dir(dest)
    if plan.new_manifest is None:
        remove_written_file(manifest_path(dest))
    elif plan.new_manifest != plan.old_manifest:
        ensure_dir(dest, BINARY_MODE)
        atomic_write(manifest_path(dest), (json.dumps(plan.new_manifest, indent=2) + "\n").encode(), 0o644)
    return versions


def describe(dest: str, manifest: dict | None, versions: dict, timeout: float,
             skip: set = frozenset()) -> dict:
    """Each managed plugin: path, sha256 and supported CNI versions (None for ``skip``: files
    check mode has not written yet)."""
    result = {}
    for name, digest in sorted((manifest or {}).get("files", {}).items()):
        path = os.path.join(dest, name)
        if name in versions:
            cni_versions = versions[name]
        elif name not in skip and os.path.isfile(path):
            cni_versions = probe_versions(path, timeout)
        else:
            cni_versions = None
        result[name] = {"path": path, "sha256": digest, "cni_versions": cni_versions}
    return result


# --- the whole operation ---------------------------------------------------------------------

@dataclass(frozen=True)
class Options:
    """The module's options, already type-checked by Ansible."""

    state: str = "present"
    dest: str = DEFAULT_DEST
    version: str | None = None
    arch: str | None = None          # None: from machine
    machine: str = ""                # platform.machine() of the managed host
    base_url: str = DEFAULT_BASE_URL
    url: str | None = None
    src: str | None = None
    src_dir: str | None = None
    checksum: str | None = None
    plugins: tuple | None = None
    force: bool = False
    probe_timeout: float = 60.0


def _check_plugins(plugins: tuple | None) -> tuple | None:
    if plugins is None:
        return None
    bad = [name for name in plugins if not PLUGIN_NAME_RE.match(name) or EXTRA_RE.search(name)]
    if bad:
        raise ConfigError("plugins", "entries must be plugin binary names such as bridge or host-local", bad)
    if not plugins:
        raise ConfigError("plugins", "must name at least one plugin; use state=absent to remove them all", [])
    return tuple(sorted(set(plugins)))


def _tarball_url(opts: Options, version: str) -> str:
    if opts.url:
        return opts.url
    arch = opts.arch or host_arch(opts.machine)
    if arch not in RELEASE_ARCHES:
        raise ConfigError("arch", "must be one of " + ", ".join(RELEASE_ARCHES), arch)
    return release_url(opts.base_url, version, arch)


def _snapshot(manifest: dict | None) -> dict:
    if not manifest:
        return {}
    return {"version": manifest.get("version"), "source": manifest.get("source"),
            "files": sorted(manifest["files"])}


def _result(plan: Plan, versions: dict, check_mode: bool, downloaded: bool, timeout: float) -> dict:
    manifest = plan.new_manifest
    pending = set(plan.install + plan.update) if check_mode else set()
    described = describe(plan.dest, manifest, versions, timeout, pending)
    return {
        "changed": plan.changed,
        "dest": plan.dest,
        "manifest": manifest_path(plan.dest),
        "version": manifest.get("version") if manifest else None,
        "source": manifest.get("source") if manifest else None,
        "plugins": described,
        "installed": list(plan.install),
        "updated": list(plan.update),
        "removed": list(plan.remove),
        "downloaded": downloaded,
        "diff": {"before": _snapshot(plan.old_manifest), "after": _snapshot(manifest)},
    }


def ensure(opts: Options, fetch, workdir: str, check_mode: bool, limits: Limits = Limits()) -> dict:
    """Bring ``opts.dest`` to the requested state. ``fetch(url)`` returns a readable response.
    Downloads and unpacked tarballs live in ``workdir``, never in dest, so check mode can
    compare exactly without writing there."""
    dest = os.path.abspath(opts.dest)
    plugins = _check_plugins(opts.plugins)
    if os.path.lexists(dest) and not os.path.isdir(dest):
        raise ConfigError("dest", "exists and is not a directory", opts.dest)
    manifest = read_manifest(dest) if os.path.isdir(dest) else None
    if opts.state == "absent":
        plan = plan_absent(dest, manifest, plugins)
        return _finish(plan, None, check_mode, False, opts.probe_timeout)
    checksum = parse_checksum(opts.checksum) if opts.checksum else None
    version = normalize_version(opts.version) if opts.version is not None else None
    if opts.src_dir:
        if checksum:
            raise ConfigError("checksum", "applies to tarballs; src_dir is a directory", opts.checksum)
        source = DirectorySource(os.path.abspath(opts.src_dir))
        digests = {"sha256": source.digest()}
        request = Request(source.path, version or "sha256:" + digests["sha256"], plugins)
        plan = plan_present(dest, manifest, request, source, digests, opts.force)
        return _finish(plan, source, check_mode, False, opts.probe_timeout)
    with tempfile.TemporaryDirectory(prefix="cnikit-install-", dir=workdir) as work:
        job = _TarballJob(opts, dest, manifest, version, plugins, checksum, fetch, work, check_mode, limits)
        return _from_local_tarball(job) if opts.src else _from_url(job)


@dataclass
class _TarballJob:
    """What installing from a tarball needs, whether the tarball is local or downloaded."""

    opts: Options
    dest: str
    manifest: dict | None
    version: str | None
    plugins: tuple | None
    checksum: Checksum | None
    fetch: object
    work: str
    check_mode: bool
    limits: Limits


def _from_local_tarball(job: _TarballJob) -> dict:
    src = os.path.abspath(job.opts.src)
    if not os.path.isfile(src):
        raise ConfigError("src", "is not a file on the managed host", job.opts.src)
    digests = file_digests(src)
    if job.checksum:
        expected = _expected(job.fetch, job.checksum, os.path.basename(src), job.limits)
        verify_digest(digests, job.checksum.algorithm, expected, src)
    source = TarballSource(src, src, job.work, job.limits)
    request = Request(src, job.version or "sha256:" + digests["sha256"], job.plugins)
    plan = plan_present(job.dest, job.manifest, request, source, digests, job.opts.force)
    return _finish(plan, source, job.check_mode, False, job.opts.probe_timeout)


def _from_url(job: _TarballJob) -> dict:
    if job.version is None:
        raise ConfigError("version", "is required to install from a release URL (base_url or url)")
    url = _tarball_url(job.opts, job.version)
    checksum = job.checksum or Checksum("sha256", url=url + ".sha256")
    request = Request(mask_url(url), job.version, job.plugins, checksum)
    if not job.opts.force and manifest_is_current(job.manifest, request, job.dest):
        return _finish(Plan(job.dest, job.manifest, job.manifest), None, job.check_mode, False, job.opts.probe_timeout)
    path, digests = download(job.fetch, url, job.work, job.limits)
    filename = urlsplit(url).path.rsplit("/", 1)[-1]
    verify_digest(digests, checksum.algorithm, _expected(job.fetch, checksum, filename, job.limits), mask_url(url))
    source = TarballSource(path, mask_url(url), job.work, job.limits)
    plan = plan_present(job.dest, job.manifest, request, source, digests, job.opts.force)
    return _finish(plan, source, job.check_mode, True, job.opts.probe_timeout)


def _expected(fetch, checksum: Checksum, filename: str, limits: Limits) -> str:
    return checksum.hexdigest or fetch_checksum(fetch, checksum, filename, limits)


def _finish(plan: Plan, source, check_mode: bool, downloaded: bool, timeout: float) -> dict:
    versions = {}
    if plan.changed and not check_mode:
        try:
            versions = apply(plan, source, timeout)
        except OSError as exc:
            raise ReleaseError(f"cannot install into {plan.dest}: {exc}") from exc
    return _result(plan, versions, check_mode, downloaded, timeout)
