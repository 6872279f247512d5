# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_cluster_member as Ansible runs it, for real, inside network namespaces the tests create:
iptables and the forwarding sysctls there are the namespace's own, so the machine's are never
touched. Includes traffic forwarded through a member whose FORWARD policy is DROP, and the
addresses a receiver sees (the sender's own inside the cluster CIDR, the member's outside)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _cluster_member

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

MODULE = "ansible_collections.cnikit.cni.plugins.modules.cni_cluster_member"
INPLACE = str(Path(os.path.abspath(_cluster_member.__file__)).parents[5])  # holds ansible_collections/
CIDR, SUBNET = "10.244.0.0/16", "10.244.1.0/24"
IPV4_FORWARD, IPV6_FORWARD = "/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"
_networks, _namespaces = itertools.count(1), itertools.count(1)


def in_netns(netns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", os.path.basename(netns), *argv], capture_output=True, text=True,
                          check=check)


def run_member(netns: str, workdir: Path, check_mode: bool = False, path_first: str = "", **args) -> dict:
    """The module run in ``netns`` as Ansible runs it (arguments from a file), with diff on;
    ``path_first`` is a directory searched for programs before the others."""
    workdir.mkdir(exist_ok=True)
    args_file = workdir / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(
        args, cache_dir=str(workdir / "cache"), _ansible_check_mode=check_mode, _ansible_diff=True,
        _ansible_remote_tmp=str(workdir), _ansible_tmpdir=None)}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([INPLACE, os.environ.get("PYTHONPATH", "")]))
    if path_first:
        env["PATH"] = os.pathsep.join([path_first, env["PATH"]])
    done = subprocess.run(["ip", "netns", "exec", os.path.basename(netns), sys.executable, "-m", MODULE,
                           str(args_file)], capture_output=True, text=True, env=env, check=False)
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"no JSON (rc {done.returncode}): {done.stdout}\n{done.stderr}") from None


def read_in(netns: str, path: str) -> str:
    return in_netns(netns, "cat", path).stdout.strip()


def rules(netns: str, table: str, family: int = 4) -> list:
    """The table's chains and rules in ``netns``, without iptables-save's comments and counters."""
    save = "iptables-save" if family == 4 else "ip6tables-save"
    return [line.split(" [")[0] for line in in_netns(netns, save, "-t", table).stdout.splitlines()
            if line.startswith((":", "-A"))]


def owned(lines: list, network: str) -> list:
    names = tuple(_cluster_member.chain_names(network).values())
    return [line for line in lines if any(name in line for name in names)]


@pytest.fixture
def make_netns():
    """Create namespaces ``cnit-cm-<pid>-<n>``; returns their path. Not the suite's ``cnit-e-``
    namespaces, which every functional test's teardown removes, those of concurrent runs too."""
    created = []

    def make() -> str:
        name = f"cnit-cm-{os.getpid()}-{next(_namespaces)}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        created.append(name)
        # A new namespace starts with the machine's IPv4 settings (net.core.devconf_inherit_init_net
        # 0 inherits IPv4's, resets IPv6's), ip_forward among them: start from forwarding off.
        subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv4.ip_forward=0"], check=True)
        return f"/var/run/netns/{name}"

    yield make
    for name in created:
        subprocess.run(["ip", "netns", "del", name], check=False)


def _network_of_the_test():
    """A network name of the test's own, whose chains the machine's own namespace must never get."""
    name = f"cnit-cm-{os.getpid()}-{next(_networks)}"
    yield name
    host_rules = subprocess.run(["iptables-save"], capture_output=True, text=True, check=False).stdout
    assert not any(chain in host_rules for chain in _cluster_member.chain_names(name).values())


@pytest.fixture
def network():
    yield from _network_of_the_test()


@pytest.fixture
def other_network():
    yield from _network_of_the_test()


def test_present_rerun_and_absent_in_a_namespace_of_its_own(make_netns, network, tmp_path):
    netns = make_netns()
    filter_before, nat_before = rules(netns, "filter"), rules(netns, "nat")
    assert read_in(netns, IPV4_FORWARD) == "0"
    options = {"network": network, "cidr": CIDR, "subnet": SUBNET}

    predicted = run_member(netns, tmp_path, check_mode=True, **options)
    assert predicted["changed"] is True and predicted["record"] is None
    assert read_in(netns, IPV4_FORWARD) == "0" and rules(netns, "filter") == filter_before
    assert not (tmp_path / "cache").exists()

    done = run_member(netns, tmp_path, **options)

    assert done["changed"] is True and done["changes"] == predicted["changes"]
    assert done["diff"] == predicted["diff"]
    assert read_in(netns, IPV4_FORWARD) == "1"
    chains = _cluster_member.chain_names(network)
    fwd, masq = chains["forward"], chains["masquerade"]
    comment = f'"cnikit.cni cluster network {network}"'
    assert owned(rules(netns, "filter"), network) == [
        f":{fwd} -", f"-A FORWARD -m comment --comment {comment} -j {fwd}",
        f"-A {fwd} -s {CIDR} -j ACCEPT", f"-A {fwd} -d {CIDR} -j ACCEPT"]
    assert owned(rules(netns, "nat"), network) == [
        f":{masq} -", f"-A POSTROUTING -s {CIDR} -m comment --comment {comment} -j {masq}",
        f"-A {masq} -d {CIDR} -j RETURN", f"-A {masq} ! -d 224.0.0.0/4 -j MASQUERADE"]
    assert _cluster_member.read_record(str(tmp_path / "cache"), network) == {
        "network": network, "cidr": CIDR, "subnet": SUBNET, "masquerade": True, "ip_forward_before": 0}
    assert "net.ipv4.ip_forward = 0" in done["diff"]["before"] and "net.ipv4.ip_forward = 1" in done["diff"]["after"]

    again = run_member(netns, tmp_path, **options)
    assert (again["changed"], again["changes"]) == (False, [])
    assert again["diff"]["before"] == again["diff"]["after"]
    assert again["record"]["ip_forward_before"] == 0

    predicted = run_member(netns, tmp_path, check_mode=True, network=network, state="absent")
    assert predicted["changed"] is True and read_in(netns, IPV4_FORWARD) == "1"

    removed = run_member(netns, tmp_path, network=network, state="absent")

    assert removed["changed"] is True and removed["changes"] == predicted["changes"]
    assert read_in(netns, IPV4_FORWARD) == "0"
    assert (rules(netns, "filter"), rules(netns, "nat")) == (filter_before, nat_before)
    assert _cluster_member.read_record(str(tmp_path / "cache"), network) is None
    assert run_member(netns, tmp_path, network=network, state="absent")["changed"] is False


def test_forwarding_already_on_stays_on_after_absent(make_netns, network, tmp_path):
    netns = make_netns()
    in_netns(netns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    options = {"network": network, "cidr": CIDR, "subnet": SUBNET}

    assert run_member(netns, tmp_path, **options)["changed"] is True
    assert run_member(netns, tmp_path, network=network, state="absent")["changed"] is True

    assert read_in(netns, IPV4_FORWARD) == "1"


def test_leaving_one_of_two_networks_keeps_forwarding_on_and_the_last_to_leave_restores_it(
        make_netns, network, other_network, tmp_path):
    netns = make_netns()
    first = {"network": network, "cidr": CIDR, "subnet": SUBNET}
    second = {"network": other_network, "cidr": "10.245.0.0/16", "subnet": "10.245.1.0/24"}
    cache_dir = str(tmp_path / "cache")
    run_member(netns, tmp_path, **first)  # turns forwarding on
    run_member(netns, tmp_path, **second)  # finds it on
    assert read_in(netns, IPV4_FORWARD) == "1"
    assert _cluster_member.read_record(cache_dir, other_network)["ip_forward_before"] == 1

    predicted = run_member(netns, tmp_path, check_mode=True, network=network, state="absent")
    left = run_member(netns, tmp_path, network=network, state="absent")

    assert left["changed"] is True and left["changes"] == predicted["changes"] and left["diff"] == predicted["diff"]
    assert read_in(netns, IPV4_FORWARD) == "1", "leaving one network turned off the forwarding the other needs"
    assert _cluster_member.read_record(cache_dir, other_network)["ip_forward_before"] == 0
    assert owned(rules(netns, "filter"), network) == [] and owned(rules(netns, "filter"), other_network) != []

    assert run_member(netns, tmp_path, network=other_network, state="absent")["changed"] is True

    assert read_in(netns, IPV4_FORWARD) == "0"
    assert _cluster_member.read_records(cache_dir) == ({}, {})


def test_drift_is_repaired_and_masquerade_off_removes_only_the_nat_chain(make_netns, network, tmp_path):
    netns = make_netns()
    options = {"network": network, "cidr": CIDR, "subnet": SUBNET}
    run_member(netns, tmp_path, **options)
    converged = owned(rules(netns, "filter"), network)
    fwd = _cluster_member.chain_names(network)["forward"]
    in_netns(netns, "iptables", "-w", "-D", fwd, "-d", CIDR, "-j", "ACCEPT")
    in_netns(netns, "iptables", "-w", "-A", fwd, "-s", "10.9.0.0/16", "-j", "ACCEPT")
    in_netns(netns, "iptables", "-w", "-D", "FORWARD", "-m", "comment", "--comment",
             f"cnikit.cni cluster network {network}", "-j", fwd)

    repaired = run_member(netns, tmp_path, **options)

    assert repaired["changes"] == [
        f"iptables -w -t filter -I {fwd} 2 -d {CIDR} -j ACCEPT", f"iptables -w -t filter -D {fwd} 3",
        f"iptables -w -t filter -I FORWARD 1 -m comment --comment 'cnikit.cni cluster network {network}' -j {fwd}"]
    assert owned(rules(netns, "filter"), network) == converged

    no_masquerade = run_member(netns, tmp_path, masquerade=False, **options)

    assert no_masquerade["changed"] is True and owned(rules(netns, "nat"), network) == []
    assert owned(rules(netns, "filter"), network) == converged
    assert _cluster_member.read_record(str(tmp_path / "cache"), network)["masquerade"] is False
    assert run_member(netns, tmp_path, masquerade=False, **options)["changed"] is False


def test_a_refused_command_fails_naming_it_with_the_changes_before_it_and_a_rerun_finishes(
        make_netns, network, tmp_path):
    netns = make_netns()
    refusing = tmp_path / "bin"
    refusing.mkdir()
    # Failure injection: an iptables that refuses every change to the nat table.
    (refusing / "iptables").write_text('#!/bin/sh\ncase " $* " in *" -t nat "*) echo "refused by the test" >&2; '
                                       'exit 4;; esac\nexec /usr/sbin/iptables "$@"\n')
    (refusing / "iptables").chmod(0o755)
    options = {"network": network, "cidr": CIDR, "subnet": SUBNET}

    failed = run_member(netns, tmp_path, path_first=str(refusing), **options)

    masq = _cluster_member.chain_names(network)["masquerade"]
    assert failed["failed"] is True
    assert failed["msg"] == f"iptables -w -t nat -N {masq} failed with exit status 4: refused by the test"
    assert failed["changed"] is True and failed["changes"][:2] == [
        f"write {tmp_path}/cache/cnikit-cluster/{network}.json", "net.ipv4.ip_forward = 1 (was 0)"]
    assert all(" -t filter " in change for change in failed["changes"][2:]) and len(failed["changes"]) == 6
    assert owned(rules(netns, "nat"), network) == []

    finished = run_member(netns, tmp_path, **options)

    assert finished["record"]["ip_forward_before"] == 0
    assert finished["changes"][0] == f"iptables -w -t nat -N {masq}"
    assert len(finished["changes"]) == 4 and all(" -t nat " in change for change in finished["changes"])
    assert run_member(netns, tmp_path, **options)["changed"] is False


def test_ipv6_forwarding_and_ip6tables(make_netns, network, tmp_path):
    netns = make_netns()
    cidr, subnet = "fd00:cafe::/48", "fd00:cafe:0:3::/64"
    assert read_in(netns, IPV6_FORWARD) == "0"

    done = run_member(netns, tmp_path, network=network, cidr=cidr, subnet=subnet)

    assert done["changed"] is True and read_in(netns, IPV6_FORWARD) == "1" and read_in(netns, IPV4_FORWARD) == "0"
    masq = _cluster_member.chain_names(network)["masquerade"]
    assert f"-A {masq} ! -d ff00::/8 -j MASQUERADE" in rules(netns, "nat", family=6)
    assert owned(rules(netns, "nat"), network) == [] and owned(rules(netns, "filter"), network) == []
    assert run_member(netns, tmp_path, network=network, cidr=cidr, subnet=subnet)["changed"] is False

    assert run_member(netns, tmp_path, network=network, state="absent")["changed"] is True
    assert read_in(netns, IPV6_FORWARD) == "0"
    assert owned(rules(netns, "nat", family=6) + rules(netns, "filter", family=6), network) == []


def test_a_damaged_record_fails_the_task_and_changes_nothing(make_netns, network, tmp_path):
    netns = make_netns()
    record = tmp_path / "cache" / "cnikit-cluster" / f"{network}.json"
    record.parent.mkdir(parents=True)
    record.write_text("{")

    failed = run_member(netns, tmp_path, network=network, cidr=CIDR, subnet=SUBNET)

    assert failed["failed"] is True and failed["msg"].startswith(f"cluster record {record}: not JSON")
    assert read_in(netns, IPV4_FORWARD) == "0" and owned(rules(netns, "filter"), network) == []


# -- traffic ------------------------------------------------------------------------------------

def _veth(router: str, router_ip: str, leaf: str, leaf_ip: str, gateway: str, name: str) -> None:
    """A veth pair made inside the namespaces (never in the machine's own): ``router`` end with
    ``router_ip``, ``leaf`` end with ``leaf_ip`` and its default route via ``gateway``."""
    router_name, leaf_name = os.path.basename(router), os.path.basename(leaf)
    subprocess.run(["ip", "-n", router_name, "link", "add", f"cnit-r{name}", "type", "veth", "peer", "name",
                    f"cnit-l{name}", "netns", leaf_name], check=True)
    for netns, device, address in ((router_name, f"cnit-r{name}", router_ip), (leaf_name, f"cnit-l{name}", leaf_ip)):
        subprocess.run(["ip", "-n", netns, "addr", "add", address, "dev", device], check=True)
        subprocess.run(["ip", "-n", netns, "link", "set", device, "up"], check=True)
    subprocess.run(["ip", "-n", leaf_name, "route", "add", "default", "via", gateway], check=True)


ECHO_SERVER = """
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", 7777))
server.listen(1)
server.settimeout(15)
print("ready", flush=True)
connection, peer = server.accept()
connection.sendall(peer[0].encode())
connection.close()
"""

CLIENT = """
import socket, sys
connection = socket.create_connection((sys.argv[1], 7777), timeout=3)
print(connection.recv(100).decode())
"""


def source_seen_by(receiver: str, sender: str, address: str) -> str:
    """The source address a TCP server in ``receiver`` sees for a connection from ``sender``."""
    server = subprocess.Popen(["ip", "netns", "exec", os.path.basename(receiver), sys.executable, "-c", ECHO_SERVER],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        return in_netns(sender, sys.executable, "-c", CLIENT, address).stdout.strip()
    finally:
        server.kill()
        server.wait()


def pings(sender: str, address: str) -> bool:
    return in_netns(sender, "ping", "-c", "1", "-W", "1", address, check=False).returncode == 0


def test_a_member_with_forward_policy_drop_forwards_the_cluster_and_masquerades_only_the_rest(
        make_netns, network, tmp_path):
    member, local, peer, outside = make_netns(), make_netns(), make_netns(), make_netns()
    _veth(member, "10.244.1.1/24", local, "10.244.1.2/24", "10.244.1.1", "a")  # a workload of this member
    _veth(member, "10.244.2.1/24", peer, "10.244.2.2/24", "10.244.2.1", "b")  # another member's subnet
    _veth(member, "192.168.77.1/24", outside, "192.168.77.2/24", "192.168.77.1", "c")  # outside the cluster
    in_netns(member, "iptables", "-w", "-P", "FORWARD", "DROP")
    in_netns(member, "sysctl", "-qw", "net.ipv4.ip_forward=1")  # so that only the policy stops the traffic
    assert not pings(local, "10.244.2.2"), "the FORWARD policy DROP does not stop the traffic: the test proves nothing"
    in_netns(member, "sysctl", "-qw", "net.ipv4.ip_forward=0")

    run_member(member, tmp_path, network=network, cidr=CIDR, subnet=SUBNET)

    assert pings(local, "10.244.2.2") and pings(peer, "10.244.1.2")
    assert source_seen_by(peer, local, "10.244.2.2") == "10.244.1.2", "traffic between members was NATed"
    assert source_seen_by(outside, local, "192.168.77.2") == "192.168.77.1", "traffic leaving was not masqueraded"

    run_member(member, tmp_path, network=network, state="absent")

    assert not pings(local, "10.244.2.2")
