# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Poisoned release tarballs given to cni_plugin_install (as Ansible runs it, over an
installed release): absolute paths, '..', symlinks, hardlinks, devices, fifos, setuid and
setgid bits, huge members, damaged archives and checksum mismatches are rejected, and dest is
byte-for-byte unchanged (names, contents, modes, owners, link targets); nothing is written
outside it."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import tarfile

import modules
import pytest
from release_server import build_release

GOOD = ["bridge", "host-local", "loopback"]
ESCAPE = "cnit-r-escaped"


def _file(name: str, data: bytes = b"\x7fELF payload", mode: int = 0o755, kind: bytes = tarfile.REGTYPE,
          linkname: str = "", size: int | None = None) -> tuple:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    if size is not None:
        info.size = size
    return info, data


def _write(path: str, members: list, declared_only: bool = False) -> None:
    """A gzipped tarball with ``members`` beside a good ``./bridge``; ``declared_only`` writes
    the headers' sizes without the data (a header that claims a huge member)."""
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        with open("/usr/lib/cni/loopback", "rb") as handle:
            good = handle.read()
        archive.addfile(*_as_added(_file("./bridge", good)))
        for info, data in members:
            if declared_only:
                archive.fileobj.write(info.tobuf(archive.format, archive.encoding, archive.errors))
                archive.offset += tarfile.BLOCKSIZE
            else:
                archive.addfile(*_as_added((info, data)))


def _as_added(member: tuple) -> tuple:
    info, data = member
    return (info, io.BytesIO(data)) if info.isreg() else (info, None)


POISONS = {
    "absolute path": ([_file(f"/tmp/{ESCAPE}")], "absolute path"),
    "'..' escaping dest": ([_file(f"../{ESCAPE}")], "contains '..'"),
    "'..' in the middle": ([_file(f"./x/../../{ESCAPE}")], "contains '..'"),
    "symlink to /etc/passwd": ([_file("./loopback", kind=tarfile.SYMTYPE, linkname="/etc/passwd")], "is a link"),
    "symlink then a file through it": ([_file("./evil", kind=tarfile.SYMTYPE, linkname="/tmp"),
                                        _file(f"./evil/{ESCAPE}")], "is a link"),
    "hardlink to /etc/shadow": ([_file("./loopback", kind=tarfile.LNKTYPE, linkname="/etc/shadow")], "is a link"),
    "character device": ([_file("./mem", kind=tarfile.CHRTYPE)], "device, fifo or other special file"),
    "block device": ([_file("./sda", kind=tarfile.BLKTYPE)], "device, fifo or other special file"),
    "fifo": ([_file("./pipe", kind=tarfile.FIFOTYPE)], "device, fifo or other special file"),
    "setuid binary": ([_file("./tuning", mode=0o4755)], "setuid or setgid"),
    "setgid binary": ([_file("./tuning", mode=0o2755)], "setuid or setgid"),
    "subdirectory": ([_file("./sub", kind=tarfile.DIRTYPE, mode=0o755), _file("./sub/tuning")], "subdirectory"),
    "name with a backslash": ([_file("./a\\b")], "tarball"),
    "member twice": ([_file("./tuning"), _file("./tuning")], "appears twice"),
}


def snapshot(root: str) -> dict:
    """Everything about a tree: names, kinds, modes, owners, contents, link targets."""
    state = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            item = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid)
            if stat.S_ISLNK(info.st_mode):
                item += (os.readlink(path),)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    item += (hashlib.sha256(handle.read()).hexdigest(),)
            state[os.path.relpath(path, root)] = item
    return state


@pytest.fixture
def installed(tmp_path):
    """dest holding an installed release, and a runner of cni_plugin_install over it."""
    if os.geteuid() != 0:
        pytest.skip("installs with root ownership")
    dest = str(tmp_path / "dest" / "bin")
    good = build_release(str(tmp_path / "releases"), "1.1.1", "amd64", GOOD)
    work = str(tmp_path / "moduletmp")

    def install(**args):
        return modules.run("cni_plugin_install", dict(args, dest=dest), work)

    result = install(src=good, version="1.1.1")
    assert not result.get("failed"), result
    return dest, install, good


def _assert_rejected(dest, before, result, expected):
    assert result.get("failed") is True, result
    assert expected in result["msg"], result["msg"]
    assert snapshot(os.path.dirname(dest)) == before
    assert not os.path.lexists(f"/tmp/{ESCAPE}")
    assert not os.path.lexists(os.path.join(os.path.dirname(dest), ESCAPE))


@pytest.mark.parametrize("poison", list(POISONS))
def test_poisoned_tarball_is_rejected_and_dest_unchanged(tmp_path, installed, poison):
    dest, install, _good = installed
    members, expected = POISONS[poison]
    evil = str(tmp_path / "evil.tgz")
    _write(evil, members)
    before = snapshot(os.path.dirname(dest))

    _assert_rejected(dest, before, install(src=evil, version="1.1.2"), expected)


def test_huge_member_is_rejected_without_reading_it(tmp_path, installed):
    dest, install, _good = installed
    evil = str(tmp_path / "huge.tgz")
    _write(evil, [_file("./tuning", size=300 << 20)], declared_only=True)
    before = snapshot(os.path.dirname(dest))
    _assert_rejected(dest, before, install(src=evil, version="1.1.2"), "over the limit of")


@pytest.mark.parametrize("damage", ["not a tarball", "truncated", "empty archive"])
def test_damaged_archive_is_rejected(tmp_path, installed, damage):
    dest, install, good = installed
    evil = str(tmp_path / "damaged.tgz")
    with open(good, "rb") as handle:
        data = handle.read()
    if damage == "not a tarball":
        data = b"<html>404 Not Found</html>" * 10
    elif damage == "truncated":
        data = data[: len(data) // 2]
    else:
        with tarfile.open(evil, "w:gz"):
            pass
        with open(evil, "rb") as handle:
            data = handle.read()
    with open(evil, "wb") as handle:
        handle.write(data)
    before = snapshot(os.path.dirname(dest))
    result = install(src=evil, version="1.1.2")
    _assert_rejected(dest, before, result, "")
    assert "not a readable tar archive" in result["msg"] or "holds no plugin binaries" in result["msg"]


def test_checksum_mismatch_is_rejected(tmp_path, installed):
    dest, install, _good = installed
    other = build_release(str(tmp_path / "other"), "1.1.2", "amd64", GOOD, patch={"bridge": b"x"})
    before = snapshot(os.path.dirname(dest))
    result = install(src=other, version="1.1.2", checksum="sha256:" + "0" * 64)
    _assert_rejected(dest, before, result, "checksum")


def test_tampered_download_is_rejected(tmp_path, installed):
    """The release server's tarball is replaced after its .sha256 was published."""
    from release_server import start_server  # pylint: disable=import-outside-toplevel

    dest, install, _good = installed
    root = str(tmp_path / "mirror")
    tarball = build_release(root, "1.1.2", "amd64", GOOD, patch={"bridge": b"x"})
    evil = str(tmp_path / "evil.tgz")
    _write(evil, [_file("./tuning")])
    shutil.copy(evil, tarball)  # the published .sha256 is the genuine one
    server, base_url = start_server(root)
    try:
        before = snapshot(os.path.dirname(dest))
        result = install(base_url=base_url, version="1.1.2", arch="amd64")
    finally:
        server.shutdown()
    _assert_rejected(dest, before, result, "checksum")
