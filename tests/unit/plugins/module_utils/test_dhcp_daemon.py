# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dhcp daemon as validation and cni_info see it: a socket that accepts, one left by a
daemon that died, none."""

from __future__ import annotations

import socket

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules.dhcp import daemon_state
from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_network_list


@pytest.fixture
def listening(tmp_path):
    path = str(tmp_path / "dhcp.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    yield path
    server.close()


@pytest.fixture
def stale(tmp_path):
    """A socket file nothing listens on any more (the daemon was killed)."""
    path = str(tmp_path / "stale.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
    return path


def _dhcp_warnings(socket_path: str | None, on_host: bool = True) -> list:
    ipam = {"type": "dhcp"} if socket_path is None else {"type": "dhcp", "daemonSocketPath": socket_path}
    conf = {"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "macvlan", "master": "eth0", "ipam": ipam}]}
    installed = (lambda _type: ["0.3.1", "0.4.0", "1.0.0"]) if on_host else None
    report = validate_network_list(conf, installed_versions=installed)
    return [w for w in report.warnings if w.path.startswith("plugins[0].ipam")]


def test_state_of_a_listening_a_stale_and_a_missing_socket(listening, stale, tmp_path):
    assert daemon_state(listening) == {"socket": listening, "present": True, "accepting": True}
    assert daemon_state(stale) == {"socket": stale, "present": True, "accepting": False}
    missing = str(tmp_path / "none.sock")
    assert daemon_state(missing) == {"socket": missing, "present": False, "accepting": False}


def test_a_regular_file_is_no_daemon_socket(tmp_path):
    path = tmp_path / "dhcp.sock"
    path.write_text("")
    assert daemon_state(str(path))["present"] is False


def test_no_warning_on_a_host_whose_daemon_listens(listening):
    assert _dhcp_warnings(listening) == []


def test_warning_names_the_socket_nothing_listens_on(tmp_path):
    missing = str(tmp_path / "none.sock")
    [warning] = _dhcp_warnings(missing)
    assert warning.path == "plugins[0].ipam.daemonSocketPath" and warning.value == missing
    assert f"no dhcp daemon listens on {missing}" in warning.message and "no socket" in warning.message


def test_warning_tells_a_dead_daemon_from_a_missing_one(stale):
    [warning] = _dhcp_warnings(stale)
    assert "accepts no connection" in warning.message


def test_without_daemon_socket_path_the_default_socket_is_checked(monkeypatch, listening):
    from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules import dhcp
    monkeypatch.setattr(dhcp, "DEFAULT_SOCKET", listening)
    assert _dhcp_warnings(None) == []
    monkeypatch.setattr(dhcp, "DEFAULT_SOCKET", listening + ".missing")
    [warning] = _dhcp_warnings(None)
    assert warning.path == "plugins[0].ipam.type" and warning.value == listening + ".missing"


def test_off_the_host_the_daemon_is_a_reminder_not_a_probe(listening):
    [warning] = _dhcp_warnings(listening, on_host=False)
    assert "needs its daemon listening on" in warning.message
