# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_info reports whether the dhcp daemon is up on its default socket."""

from __future__ import annotations

import socket

from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules import dhcp
from ansible_collections.cnikit.cni.plugins.modules import cni_info


def test_cni_info_reports_the_dhcp_daemon(run_module, tmp_path, monkeypatch):
    path = str(tmp_path / "dhcp.sock")
    monkeypatch.setattr(dhcp, "DEFAULT_SOCKET", path)
    down = run_module(cni_info, gather=["plugins"], cni_path=[str(tmp_path)])
    assert down["dhcp_daemon"] == {"socket": path, "present": False, "accepting": False}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(1)
        up = run_module(cni_info, gather=["plugins"], cni_path=[str(tmp_path)])
    assert up["dhcp_daemon"] == {"socket": path, "present": True, "accepting": True}
    assert "dhcp_daemon" not in run_module(cni_info, gather=["namespaces"])
