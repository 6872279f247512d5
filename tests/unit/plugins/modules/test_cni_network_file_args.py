# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_network's file attributes (Ansible's common file arguments) as Ansible runs the module:
applied without a rewrite when only they differ, predicted in check mode, shown in the diff."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess

import pytest

from ansible_collections.cnikit.cni.plugins.modules import cni_network

LOOPBACK = [{"type": "loopback"}]
BRIDGE = [{"type": "bridge", "bridge": "cnit-rf-u0", "ipam": {"type": "host-local", "subnet": "10.251.21.0/24"}}]


@pytest.fixture
def network(run_module, tmp_path):
    """``network(**args)``: cni_network for the network 'web' in ``tmp_path``, with ``args``."""
    def run(check_mode=False, **args):
        args = {"name": "web", "plugins": LOOPBACK, "conf_dir": str(tmp_path), "check_plugins": False,
                "_ansible_check_mode": check_mode, "_ansible_diff": True, **args}
        return run_module(cni_network, **args)
    return run


def _stat(tmp_path):
    return os.stat(tmp_path / "10-web.conflist")


def test_only_the_mode_differs(network, tmp_path):
    network()
    inode = _stat(tmp_path).st_ino
    predicted = network(check_mode=True, mode="0600")
    assert stat.S_IMODE(_stat(tmp_path).st_mode) == 0o644, "check mode changed the file"
    applied = network(mode="0600")
    assert stat.S_IMODE(_stat(tmp_path).st_mode) == 0o600 and _stat(tmp_path).st_ino == inode, "rewritten"
    for result in (predicted, applied):
        assert result["changed"]
        assert (result["diff"]["before"], result["diff"]["after"]) == ({"mode": "0644"}, {"mode": "0600"})
    again = network(mode="0600")
    assert not again["changed"] and "diff" not in again


def test_owner_and_group_by_number_and_name(network, tmp_path):
    network()
    result = network(owner="1", group="daemon")
    assert result["changed"] and result["diff"]["after"] == {"owner": 1, "group": 1}
    assert (_stat(tmp_path).st_uid, _stat(tmp_path).st_gid) == (1, 1)
    assert not network(owner="daemon", group="1")["changed"]


def test_content_and_mode_change_diff_both(network, tmp_path):
    network()
    result = network(plugins=BRIDGE, mode="0640")
    content, attributes = result["diff"]
    assert '"loopback"' in content["before"] and '"bridge"' in content["after"]
    assert (attributes["before"], attributes["after"]) == ({"mode": "0644"}, {"mode": "0640"})
    assert stat.S_IMODE(_stat(tmp_path).st_mode) == 0o640


def test_a_new_file_gets_its_attributes_with_the_write(network, tmp_path):
    result = network(mode="0600", owner="1")
    assert result["changed"] and isinstance(result["diff"], dict), "a new file has no attribute diff"
    st = _stat(tmp_path)
    assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o600, 1)


def test_mode_keeps_its_own_error(network, tmp_path):
    result = network(mode="u=rw")
    assert result["failed"] and "mode" in result["msg"] and "'u=rw'" in result["msg"]
    assert not (tmp_path / "10-web.conflist").exists()


def test_unknown_owner_fails_before_writing(network, tmp_path):
    result = network(owner="cnit-rf-no-such-user")
    assert result["failed"] and "owner" in result["msg"] and "cnit-rf-no-such-user" in result["msg"]
    assert not (tmp_path / "10-web.conflist").exists()


def _chattr_works(path) -> bool:
    probe = path / "probe"
    probe.write_text("")
    works = shutil.which("chattr") and subprocess.run(["chattr", "+A", str(probe)], check=False).returncode == 0
    probe.unlink()
    return bool(works)


def test_chattr_attributes(network, tmp_path):
    if not _chattr_works(tmp_path):
        pytest.skip("the file system of the temporary directory has no chattr attributes")
    network()
    predicted = network(check_mode=True, attributes="A")
    applied = network(attributes="A")
    flags = subprocess.run(["lsattr", "-d", str(tmp_path / "10-web.conflist")], capture_output=True, text=True,
                           check=True).stdout.split()[0]
    assert "A" in flags
    assert predicted["changed"] and predicted["diff"]["after"] == {"attributes": "=A"}
    assert applied["changed"] and applied["diff"] == dict(predicted["diff"])
    assert not network(attributes="A")["changed"]


def test_selinux_options_are_accepted_where_selinux_is_off(network, tmp_path):
    network()
    result = network(setype="etc_t", seuser="system_u")
    assert not result.get("failed") and not result["changed"]


@pytest.mark.parametrize("unsafe_writes", [False, True])
def test_a_file_no_rename_can_replace(network, tmp_path, monkeypatch, unsafe_writes):
    network()
    inode = _stat(tmp_path).st_ino

    def refuse(src, dst, **_dir_fds):  # as for a bind-mounted file
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), dst)
    monkeypatch.setattr(os, "replace", refuse)
    result = network(plugins=BRIDGE, unsafe_writes=unsafe_writes)
    text = (tmp_path / "10-web.conflist").read_text()
    if unsafe_writes:
        assert result["changed"] and '"bridge"' in text and _stat(tmp_path).st_ino == inode
    else:
        assert result["failed"] and "unsafe_writes=true" in result["msg"] and '"loopback"' in text
    assert sorted(os.listdir(tmp_path)) == ["10-web.conflist"], "a temporary file was left behind"
