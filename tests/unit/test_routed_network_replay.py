# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The routed_network role's replay after a reboot, as files: the script and the systemd unit
rendered by Ansible's templar from the role's variables. (The script run for real inside a
namespace: tests/functional/test_routed_network_replay_real.py; on the fleet: molecule's cluster.)"""

from __future__ import annotations

import subprocess

from role_templates import render

KEPT = {
    "sysctls": [{"name": "net.ipv6.conf.eth0.accept_ra", "path": "/proc/sys/net/ipv6/conf/eth0/accept_ra", "value": 2},
                {"name": "net.ipv4.ip_forward", "path": "/proc/sys/net/ipv4/ip_forward", "value": 1}],
    "chains": [{"command": "iptables", "table": "nat", "chain": "CNIKIT-MASQ-164CF1CA", "hook": "POSTROUTING",
                "jump": ["-s", "10.244.0.0/16", "-m", "comment", "--comment", "cnikit.cni cluster network cluster",
                         "-j", "CNIKIT-MASQ-164CF1CA"],
                "rules": [["-d", "10.244.0.0/16", "-j", "RETURN"], ["!", "-d", "224.0.0.0/4", "-j", "MASQUERADE"]]}]}
# What KEPT renders to: forwarding (accept_ra first), then the chain with its rules and its jump.
KEPT_COMMANDS = [
    "replay_sysctl /proc/sys/net/ipv6/conf/eth0/accept_ra 2",
    "replay_sysctl /proc/sys/net/ipv4/ip_forward 1",
    "replay_chain iptables nat CNIKIT-MASQ-164CF1CA",
    "replay_rule iptables nat CNIKIT-MASQ-164CF1CA -d 10.244.0.0/16 -j RETURN",
    "replay_rule iptables nat CNIKIT-MASQ-164CF1CA '!' -d 224.0.0.0/4 -j MASQUERADE",
    "replay_jump iptables nat POSTROUTING -s 10.244.0.0/16 -m comment --comment "
    "'cnikit.cni cluster network cluster' -j CNIKIT-MASQ-164CF1CA"]
DUAL_ALLOCATION = {"subnets": {"a": "10.244.0.0/24", "b": "10.244.1.0/24"},
                   "addresses": {"a": "192.0.2.1", "b": "192.0.2.2"},
                   "subnets_v6": {"a": "fd44::/64", "b": "fd44:0:0:1::/64"},
                   "addresses_v6": {"a": "2001:db8::1", "b": "2001:db8::2"}}


def render_script(**variables) -> str:
    return render("routed_network", "replay.sh.j2", **{
        "cni_cluster_cidr": "10.244.0.0/16", "cni_cluster_cidr_v6": "fd44::/48", "inventory_hostname": "b",
        "cni_cluster_allocation": DUAL_ALLOCATION, "cni_cluster_own_subnet": "10.244.1.0/24",
        "cni_cluster_own_subnet_v6": "fd44:0:0:1::/64", "cni_cluster_membership": {"kept": KEPT},
        "cni_cluster_underlay": {"interface": "eth0", "mtu": 1500, "adjacent": ["a"], "not_adjacent": []},
        **variables})


def commands(script: str) -> list:
    """The script's lines that replay something, in order."""
    return [line for line in script.splitlines() if line.startswith("replay_") and "()" not in line]


def test_the_script_puts_back_forwarding_then_the_chains_then_the_routes_of_both_families():
    script = render_script()

    assert script.startswith("#!/bin/sh\n# Written by cnikit.cni.routed_network for the network cluster: ")
    assert "\nprotocol=210\n" in script
    assert commands(script) == KEPT_COMMANDS + [
        "replay_route unicast 10.244.0.0/24 via 192.0.2.1  # a",
        "replay_route unicast fd44::/64 via 2001:db8::1  # a",
        "replay_route unreachable 10.244.1.0/24 metric 1000  # b",
        "replay_route unreachable fd44:0:0:1::/64 metric 1000  # b"]
    assert subprocess.run(["sh", "-n"], input=script, text=True, check=False).returncode == 0


def test_the_script_makes_the_vxlan_device_and_its_peers_before_the_routes_through_it():
    # One segment apart: b reaches a through VXLAN (an IPv4 network, as VXLAN carries IPv4 only).
    script = render_script(
        cni_cluster_cidr_v6="", cni_cluster_vxlan_device="cnit-vx0", cni_cluster_vxlan_vni=7, cni_cluster_vxlan_port=4789,
        cni_cluster_underlay={"interface": "eth1", "mtu": 1500, "adjacent": [],
                              "not_adjacent": [{"name": "a", "address": "192.0.2.1", "reason": "via 198.51.100.1"}]})

    assert commands(script) == KEPT_COMMANDS + [
        "replay_vxlan cnit-vx0 7 4789 192.0.2.2 eth1 0a:58:0a:f4:01:00 10.244.1.0",
        "replay_vxlan_peer cnit-vx0 10.244.0.0 0a:58:0a:f4:00:00 192.0.2.1  # a",
        "replay_route unicast 10.244.0.0/24 via 10.244.0.0 dev cnit-vx0 onlink  # a",
        "replay_route unreachable 10.244.1.0/24 metric 1000  # b"]
    assert subprocess.run(["sh", "-n"], input=script, text=True, check=False).returncode == 0


def test_the_script_makes_no_vxlan_device_where_every_peer_is_adjacent():
    assert "replay_vxlan " not in "\n".join(commands(render_script(cni_cluster_cidr_v6="")))


def test_the_script_sets_the_protocol_number_the_role_gives_cni_route():
    assert "\nprotocol=77\n" in render_script(cni_cluster_route_protocol=77)


def test_a_value_with_shell_characters_stays_one_word():
    kept = {"sysctls": [], "chains": [dict(KEPT["chains"][0], rules=[["-d", "$(reboot)", "-j", "RETURN"]])]}

    script = render_script(cni_cluster_membership={"kept": kept})

    assert "replay_rule iptables nat CNIKIT-MASQ-164CF1CA -d '$(reboot)' -j RETURN" in commands(script)


def unit_entries(text: str) -> list:
    """The unit's (section, key, value) entries in order, comments and blank lines left out."""
    entries, section = [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _equals, value = line.partition("=")
        entries.append((section, key, value))
    return entries


def test_the_unit_runs_the_script_once_online_and_again_when_networkd_restarts():
    unit = render("routed_network", "replay.service.j2", cni_cluster_network="pods",
                  cni_cluster_replay_script_dir="/opt/sbin")

    assert unit.startswith("# Written by cnikit.cni.routed_network for the network pods: ")
    assert unit_entries(unit) == [
        ("Unit", "Description", "Put back the routed network pods: forwarding, chains, routes (cnikit.cni)"),
        ("Unit", "Wants", "network-online.target"),
        ("Unit", "After", "network-online.target"),
        ("Unit", "After", "systemd-networkd.service"),
        ("Unit", "PartOf", "systemd-networkd.service"),
        ("Service", "Type", "oneshot"),
        ("Service", "RemainAfterExit", "yes"),
        ("Service", "ExecStart", "/opt/sbin/cnikit-cluster-replay-pods"),
        ("Install", "WantedBy", "multi-user.target")]
