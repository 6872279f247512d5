# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_cluster_member as Ansible runs it, where it changes nothing on the machine: bad input, a
damaged record, leaving a network never joined. Joining changes the host's iptables and
sysctls, so it runs only inside namespaces of its own: tests/functional/test_cluster_member_real.py."""

from __future__ import annotations

import json

from ansible_collections.cnikit.cni.plugins.modules import cni_cluster_member, cni_info


def test_bad_input_fails_naming_the_option_and_creates_nothing(run_module, tmp_path):
    cache_dir = tmp_path / "cache"

    result = run_module(cni_cluster_member, network="cluster", cidr="10.244.0.0/16", subnet="10.244.300.0/24",
                        cache_dir=str(cache_dir))

    assert result["failed"] is True and result["error"]["path"] == "subnet"
    assert result["msg"] == ("subnet: is not a CIDR: a network address and a prefix length, such as 10.244.0.0/24 "
                             "(got '10.244.300.0/24')")
    assert not cache_dir.exists()


def test_a_damaged_record_fails_naming_the_file_and_cni_info_reports_it(run_module, tmp_path):
    record = tmp_path / "cnikit-cluster" / "cluster.json"
    record.parent.mkdir()
    record.write_text('{"format": 1, "network": "cluster"}')

    result = run_module(cni_cluster_member, network="cluster", cidr="10.244.0.0/16", subnet="10.244.3.0/24",
                        cache_dir=str(tmp_path))
    info = run_module(cni_info, gather=["clusters"], cache_dir=str(tmp_path))

    message = f"cluster record {record}: lacks cidr, subnet, masquerade, ip_forward_before"
    assert result["failed"] is True and result["msg"] == message and result["error"]["path"] == str(record)
    assert info.get("failed") is not True
    assert info["clusters"]["cluster"]["error"] == message and info["clusters"]["cluster"]["subnet"] is None
    assert message in json.dumps(info["warnings"])  # a string before ansible-core 2.19, a summary since


def test_leaving_a_network_never_joined_changes_nothing(run_module, tmp_path):
    result = run_module(cni_cluster_member, network="cnit-never-joined", state="absent", cache_dir=str(tmp_path),
                        _ansible_diff=True)

    assert result.get("failed") is not True, result.get("msg")
    assert (result["changed"], result["changes"], result["record"]) == (False, [], None)
    assert result["path"] == str(tmp_path / "cnikit-cluster" / "cnit-never-joined.json")


def test_a_symlinked_record_directory_fails_naming_it_and_nothing_is_written_through_it(run_module, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "cnikit-cluster").symlink_to(elsewhere)

    result = run_module(cni_cluster_member, network="cluster", cidr="10.244.0.0/16", subnet="10.244.3.0/24",
                        cache_dir=str(cache_dir))

    assert result["failed"] is True and result["error"]["path"] == "cache_dir"
    assert f"{cache_dir}/cnikit-cluster is a symbolic link" in result["msg"]
    assert list(elsewhere.iterdir()) == []


def test_a_cache_dir_others_can_write_is_warned_of(run_module, tmp_path):
    tmp_path.chmod(0o777)

    result = run_module(cni_cluster_member, network="cnit-never-joined", state="absent", cache_dir=str(tmp_path))

    assert result.get("failed") is not True, result.get("msg")
    warnings = json.dumps(result["warnings"])  # a string before ansible-core 2.19, a summary since
    assert f"cache_dir {tmp_path} (owner " in warnings and "mode 0777) is writable by group or others" in warnings
