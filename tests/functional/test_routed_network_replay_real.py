# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The routed_network role's replay script, rendered by Ansible's templar and run for real inside a
network namespace the test creates (its routes, iptables and forwarding are the namespace's own):
what a reboot lost comes back, a second run changes nothing, and a route that is not the network's
stays where one of the network's would go."""

from __future__ import annotations

import os
import subprocess

import pytest
from role_templates import render

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

NETNS = f"cnit-rp-{os.getpid()}"
KEPT = {"sysctls": [{"name": "net.ipv4.ip_forward", "path": "/proc/sys/net/ipv4/ip_forward", "value": 1}],
        "chains": [{"command": "iptables", "table": "filter", "chain": "CNIKIT-FWD-TEST", "hook": "FORWARD",
                    "jump": ["-m", "comment", "--comment", "cnikit.cni cluster network test", "-j", "CNIKIT-FWD-TEST"],
                    "rules": [["-s", "10.244.0.0/16", "-j", "ACCEPT"], ["-d", "10.244.0.0/16", "-j", "ACCEPT"]]}]}
ALLOCATION = {"subnets": {"a": "10.244.0.0/24", "b": "10.244.1.0/24", "c": "10.244.2.0/24"},
              "addresses": {"a": "192.0.2.1", "b": "192.0.2.2", "c": "192.0.2.3"}}


def in_netns(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", NETNS, *argv], capture_output=True, text=True, check=check)


@pytest.fixture
def uplink():
    """The namespace, with forwarding off and an uplink holding 192.0.2.2/24 (a veth pair, both ends inside)."""
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    try:
        for argv in (["sysctl", "-qw", "net.ipv4.ip_forward=0"],
                     ["ip", "link", "add", "cnit-rp0", "type", "veth", "peer", "name", "cnit-rp1"],
                     ["ip", "addr", "add", "192.0.2.2/24", "dev", "cnit-rp0"],
                     ["ip", "link", "set", "cnit-rp0", "up"], ["ip", "link", "set", "cnit-rp1", "up"]):
            in_netns(*argv)
        yield
    finally:
        subprocess.run(["ip", "netns", "del", NETNS], check=False)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "replay"
    path.write_text(render("routed_network", "replay.sh.j2", cni_cluster_cidr="10.244.0.0/16", inventory_hostname="b",
                           cni_cluster_allocation=ALLOCATION, cni_cluster_own_subnet="10.244.1.0/24",
                           cni_cluster_membership={"kept": KEPT},
                           cni_cluster_underlay={"interface": "eth0", "mtu": 1500, "adjacent": ["a", "c"], "not_adjacent": []}))
    return str(path)


def state() -> tuple:
    routes = in_netns("ip", "route", "show", "proto", "210").stdout.splitlines()
    chains = [line for line in in_netns("iptables", "-S").stdout.splitlines() if "CNIKIT" in line]
    return routes, chains, in_netns("cat", "/proc/sys/net/ipv4/ip_forward").stdout.strip()


def test_the_replay_puts_back_forwarding_chains_and_routes_and_a_second_run_changes_nothing(uplink, script):
    first = in_netns("sh", script, check=False)
    after_first = state()
    second = in_netns("sh", script, check=False)

    assert (first.returncode, first.stderr, second.returncode, second.stderr) == (0, "", 0, "")
    assert state() == after_first
    routes, chains, forward = after_first
    # Listed as routes of protocol 210 (ip leaves out the protocol it was asked for).
    assert [" ".join(route.split()) for route in routes] == [
        "10.244.0.0/24 via 192.0.2.1 dev cnit-rp0",
        "unreachable 10.244.1.0/24 metric 1000",
        "10.244.2.0/24 via 192.0.2.3 dev cnit-rp0"]
    assert chains == ["-N CNIKIT-FWD-TEST",
                      '-A FORWARD -m comment --comment "cnikit.cni cluster network test" -j CNIKIT-FWD-TEST',
                      "-A CNIKIT-FWD-TEST -s 10.244.0.0/16 -j ACCEPT", "-A CNIKIT-FWD-TEST -d 10.244.0.0/16 -j ACCEPT"]
    assert forward == "1"


def test_an_own_route_that_drifted_is_replaced_and_anothers_route_is_left_with_exit_1(uplink, script):
    in_netns("ip", "route", "add", "10.244.0.0/24", "via", "192.0.2.9", "proto", "static")
    in_netns("ip", "route", "add", "blackhole", "10.244.1.0/24", "metric", "1000", "proto", "210")

    replayed = in_netns("sh", script, check=False)

    assert replayed.returncode == 1
    assert "route to 10.244.0.0/24 not added (RTNETLINK answers: File exists): a route there that is not the " \
           "network's stays" in replayed.stderr
    assert in_netns("ip", "route", "show", "10.244.0.0/24").stdout.split() == \
        ["10.244.0.0/24", "via", "192.0.2.9", "dev", "cnit-rp0", "proto", "static"]
    assert in_netns("ip", "route", "show", "10.244.1.0/24").stdout.split()[:2] == ["unreachable", "10.244.1.0/24"]
    assert in_netns("ip", "route", "show", "10.244.2.0/24").stdout.split()[:3] == ["10.244.2.0/24", "via", "192.0.2.3"]
