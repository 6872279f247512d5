# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_fileio's atomic writes: what a writer killed midway leaves is cleaned up by the next write or
removal of the same file, and never what a live writer is still writing."""

from __future__ import annotations

import fcntl
import os
import tempfile

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _fileio


def _abandoned_temp(target) -> str:
    """A temporary file as a writer killed before its rename leaves it: unlocked."""
    fd, path = tempfile.mkstemp(prefix=f".{target.name}.", suffix=_fileio.TEMP_SUFFIX, dir=target.parent)
    os.write(fd, b"half")
    os.close(fd)
    return path


def test_atomic_write_replaces_content_with_mode(tmp_path):
    target = tmp_path / "net.conflist"
    target.write_bytes(b"old")
    _fileio.atomic_write(str(target), b"new", mode=0o600)
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o7777 == 0o600
    assert sorted(os.listdir(tmp_path)) == ["net.conflist"]


def test_atomic_write_removes_the_temp_files_killed_writers_left(tmp_path):
    target = tmp_path / "net.conflist"
    abandoned = [_abandoned_temp(target), _abandoned_temp(target)]
    other = _abandoned_temp(tmp_path / "other.conflist")
    _fileio.atomic_write(str(target), b"new")
    assert not any(os.path.exists(p) for p in abandoned)
    assert os.path.exists(other), "another file's temporary file is its own writer's to clean"
    assert target.read_bytes() == b"new"


def test_a_live_writers_temp_file_is_left_alone(tmp_path):
    target = tmp_path / "net.conflist"
    live = _abandoned_temp(target)
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _fileio.atomic_write(str(target), b"new")
        assert _fileio.remove_written_file(str(target)) is True
        assert os.path.exists(live)
    finally:
        os.close(fd)
    assert not target.exists()


def test_remove_written_file_takes_abandoned_temp_files_along(tmp_path):
    target = tmp_path / "entry"
    target.write_bytes(b"x")
    abandoned = _abandoned_temp(target)
    assert _fileio.remove_written_file(str(target)) is True
    assert os.listdir(tmp_path) == []
    assert not os.path.exists(abandoned)
    assert _fileio.remove_written_file(str(target)) is False


def _swept_before_flock(monkeypatch, times: int) -> list:
    """Make another writer's sweep delete the first ``times`` new temporary files between their
    creation and their flock; return the paths of the files flocked."""
    real_flock = fcntl.flock
    created = []

    def swept_then_flock(fd, operation):
        path = os.readlink(f"/proc/self/fd/{fd}")
        created.append(path)
        if len(created) <= times:
            os.unlink(path)
        real_flock(fd, operation)

    monkeypatch.setattr(_fileio.fcntl, "flock", swept_then_flock)
    return created


def test_a_temp_file_swept_before_its_writer_locked_it_is_written_again(tmp_path, monkeypatch):
    """Between creating its temporary file and flocking it another writer's sweep may take the
    new file for abandoned and delete it; the writer notices (no links left) and starts over."""
    target = tmp_path / "net.conflist"
    created = _swept_before_flock(monkeypatch, 1)
    _fileio.atomic_write(str(target), b"new")
    assert len(created) == 2
    assert target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["net.conflist"]


def test_the_temp_file_is_locked_until_renamed(tmp_path, monkeypatch):
    """What keeps a concurrent write's sweep away from a file still being written."""
    target = tmp_path / "net.conflist"
    real_replace = os.replace
    seen = []

    def replace_after_probing_the_lock(src, dst, src_dir_fd=None, dst_dir_fd=None):
        fd = os.open(src, os.O_RDONLY, dir_fd=src_dir_fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("unlocked")
        except BlockingIOError:
            seen.append("locked")
        finally:
            os.close(fd)
        real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(_fileio.os, "replace", replace_after_probing_the_lock)
    _fileio.atomic_write(str(target), b"new")
    assert seen == ["locked"]


def test_a_write_whose_temp_files_keep_vanishing_gives_up_and_leaves_the_target(tmp_path, monkeypatch):
    target = tmp_path / "net.conflist"
    target.write_bytes(b"old")
    _swept_before_flock(monkeypatch, _fileio.SWEPT_WRITE_ATTEMPTS)
    with pytest.raises(OSError) as caught:
        _fileio.atomic_write(str(target), b"new")
    assert caught.value.filename == target.name
    assert f"removed by others {_fileio.SWEPT_WRITE_ATTEMPTS} times" in str(caught.value)
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["net.conflist"]
