# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Where plugin binaries come from: an upstream release (or a mirror with its layout), a
tarball on the managed host, or a directory of binaries. Each opened source offers the same
face to the plan (see ``_manifest``): ``what``, ``files``, ``identity``, ``downloaded`` and
``open(name)``. A tarball is checked and unpacked into a work directory, never into dest."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ._download import (
    Checksum, Limits, copy_hashed, download, expected_digest, file_digests, mask_url,
    verify_digest,
)
from ._errors import ConfigError, ReleaseError
from ._binaries import BinaryMemo
from ._identifiers import is_plugin_file_name
from ._manifest import EXTRA_RE, is_plugin_name, sha256_of
from ._manifest_file import is_release_version

if TYPE_CHECKING:  # imported where a tarball is unpacked: a converged install unpacks none
    import tarfile

DEFAULT_BASE_URL = "https://github.com/containernetworking/plugins/releases/download"

# platform.machine() -> release arch. mips64 needs the byte order: only little-endian is released.
ARCH_BY_MACHINE = {
    "x86_64": "amd64", "amd64": "amd64",
    "aarch64": "arm64", "arm64": "arm64",
    "armv6l": "arm", "armv7l": "arm", "armv8l": "arm",
    "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64",
}
RELEASE_ARCHES = ("amd64", "arm", "arm64", "mips64le", "ppc64le", "riscv64", "s390x")


# --- releases: names, versions, URLs ---------------------------------------------------------

def host_arch(machine: str, byteorder: str = sys.byteorder) -> str:
    """The release arch for a ``platform.machine()`` value."""
    if machine == "mips64" and byteorder == "little":
        return "mips64le"
    if machine in ARCH_BY_MACHINE:
        return ARCH_BY_MACHINE[machine]
    raise ConfigError("arch", f"no CNI plugins release for machine type {machine!r}; set arch to one of "
                      f"{', '.join(RELEASE_ARCHES)}")


def normalize_version(version: str) -> str:
    """The reference set's version: ``v1.9.1`` or ``1.9.1`` -> ``1.9.1``. Only a release of the
    reference plugins: validation and cni_info take it for the release the binaries are."""
    text = str(version).strip()
    bare = text[1:] if text[:1] in ("v", "V") else text
    if not is_release_version(bare):
        raise ConfigError("version", "must be a release version of the reference plugins such as 1.9.1 or v1.9.1; "
                          "to install something else (flannel's v1.9.1-flannel1, a site's build), give it a set of "
                          "its own with plugin_set, whose version may be any label", version)
    return bare


def check_set_version(version: str) -> str:
    """The version of a set other than the reference release: whatever its project calls it
    (flannel's ``v1.9.1-flannel1``, a site's ``2024.1``), as long as it is a plain label."""
    text = str(version)
    if not text:
        raise ConfigError("version", "must not be empty", version)
    if text != text.strip():
        raise ConfigError("version", "must not start or end with white space", version)
    if len(text) > 128 or any(char in "/\\" or not char.isprintable() for char in text):
        raise ConfigError("version", "must not contain a path separator or control character, "
                          "and must be at most 128 characters", version)
    return text


def tarball_name(version: str, arch: str) -> str:
    return f"cni-plugins-linux-{arch}-v{version}.tgz"


def release_url(base_url: str, version: str, arch: str) -> str:
    """Where the upstream release (or a mirror with the same layout) keeps the tarball."""
    return f"{base_url.rstrip('/')}/v{version}/{tarball_name(version, arch)}"


def default_checksum(url: str) -> Checksum:
    """The release's own checksum file, published beside each tarball."""
    return Checksum("sha256", url=url + ".sha256")


# --- tarballs --------------------------------------------------------------------------------

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
    if not is_plugin_file_name(stripped):
        raise ReleaseError(f"unsupported tarball {what}: member {name!r} is not a plain file name")
    return stripped


class TarballSource:
    """A checked tarball: in one pass every member is checked, and each binary is hashed and
    unpacked into ``workdir`` (never dest), from where the install copies it. ``identity`` holds
    the tarball's own digests."""

    def __init__(self, path: str, what: str, identity: dict, workdir: str, limits: Limits,
                 downloaded: bool = False):
        self.what = what
        self.identity = identity
        self.downloaded = downloaded
        self.files = {}  # plugin name -> sha256 (binaries only)
        self.extras = []
        self._unpacked = tempfile.mkdtemp(prefix="unpacked-", dir=workdir)
        import gzip  # pylint: disable=import-outside-toplevel
        import tarfile  # pylint: disable=import-outside-toplevel
        import zlib  # pylint: disable=import-outside-toplevel
        try:
            with tarfile.open(path, "r:*") as archive:
                self._unpack(archive, limits)
        except (tarfile.TarError, gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise ReleaseError(f"{what} is not a readable tar archive: {exc}") from exc
        if not self.files:
            raise ReleaseError(f"tarball {what} holds no plugin binaries")

    def _unpack(self, archive: tarfile.TarFile, limits: Limits) -> None:
        total = 0
        for member in archive:
            name = _member_name(member, self.what)
            if name is None:
                continue
            if member.size > limits.member:
                raise ReleaseError(f"tarball {self.what}: member {member.name!r} is {member.size} bytes, "
                                   f"over the limit of {limits.member}")
            total += member.size
            if total > limits.total:
                raise ReleaseError(f"tarball {self.what}: members add up to more than {limits.total} bytes")
            if name in self.files or name in self.extras:
                raise ReleaseError(f"tarball {self.what}: member {member.name!r} appears twice")
            if EXTRA_RE.search(name):
                self.extras.append(name)
                continue
            self.files[name] = copy_hashed(archive.extractfile(member), os.path.join(self._unpacked, name),
                                           member.name, limits.member)

    def open(self, name: str):
        return open(os.path.join(self._unpacked, name), "rb")


def open_local_tarball(given: str, checksum: Checksum | None, fetch, workdir: str, limits: Limits) -> TarballSource:
    """A tarball on the managed host, checked against ``checksum`` when one is given."""
    path = os.path.abspath(given)
    if not os.path.isfile(path):
        raise ConfigError("src", "is not a file on the managed host", given)
    digests = file_digests(path)
    if checksum:
        verify_digest(digests, checksum.algorithm,
                      expected_digest(fetch, checksum, os.path.basename(path), limits), path)
    return TarballSource(path, path, digests, workdir, limits)


def download_tarball(url: str, checksum: Checksum, fetch, workdir: str, limits: Limits) -> TarballSource:
    """Download ``url`` into ``workdir`` and check it against ``checksum``."""
    path, digests = download(fetch, url, workdir, limits)
    filename = urlsplit(url).path.rsplit("/", 1)[-1]
    verify_digest(digests, checksum.algorithm, expected_digest(fetch, checksum, filename, limits), mask_url(url))
    return TarballSource(path, mask_url(url), digests, workdir, limits, downloaded=True)


# --- renaming ---------------------------------------------------------------------------------

class RenamedSource:
    """A source whose members are installed under other names (``rename``: {member: name}), as
    flannel's ``flannel-amd64`` is installed as ``flannel``; ``files`` is by installed name."""

    def __init__(self, source, rename: dict):
        self.what = source.what
        self.identity = source.identity
        self.downloaded = source.downloaded
        self._source = source
        unknown = sorted(set(rename) - set(source.files))
        if unknown:
            raise ConfigError("rename", f"not in {source.what}, which holds {', '.join(sorted(source.files))}", unknown)
        self._members = {}  # installed name -> member
        self.files = {}
        for member, digest in sorted(source.files.items()):
            name = rename.get(member, member)
            if name in self._members:
                raise ConfigError("rename", f"{name} would be the name of more than one member "
                                  f"({self._members[name]}, {member})", rename)
            self._members[name] = member
            self.files[name] = digest

    def open(self, name: str):
        return self._source.open(self._members[name])


# --- directories -----------------------------------------------------------------------------

class DirectorySource:
    """Executable regular files of a directory, e.g. a distro package's /usr/lib/cni.
    ``identity`` is one sha256 over the sorted (name, sha256) pairs: the directory's content."""

    downloaded = False

    def __init__(self, path: str, memo: BinaryMemo):
        if not os.path.isdir(path):
            raise ConfigError("src_dir", "is not a directory", path)
        self.path = path
        self.what = path
        self.files = {}
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            if os.path.isfile(full) and os.access(full, os.X_OK) and is_plugin_name(name):
                self.files[name] = sha256_of(full, memo)
        if not self.files:
            raise ConfigError("src_dir", "holds no executable plugin binaries", path)
        listing = "".join(f"{digest}  {name}\n" for name, digest in sorted(self.files.items()))
        self.identity = {"sha256": hashlib.sha256(listing.encode()).hexdigest()}

    def open(self, name: str):
        return open(os.path.join(self.path, name), "rb")
