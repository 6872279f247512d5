# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dhcp IPAM plugin end to end, for real: dnsmasq in a namespace of the test on the test's
bridge, the plugin release's ``dhcp daemon`` as a process on a socket of the test, and the engine
attaching namespaces to a bridge and a macvlan network with ``ipam: {type: dhcp}``. What each
release and main plugin does on DEL (a DHCPRELEASE or not) is asserted from dnsmasq's lease file
and log, and
written down in docs/user-guide.md ("A DHCP network")."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from dhcp_lab import DhcpDaemon, DhcpServer

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_PLUGINS = "/usr/lib/cni"
if os.geteuid() != 0 or not os.access(os.path.join(DEBIAN_PLUGINS, "dhcp"), os.X_OK):
    pytest.skip("needs root and the plugin binaries in /usr/lib/cni", allow_module_level=True)
if subprocess.run(["sh", "-c", "command -v dnsmasq"], capture_output=True, check=False).returncode:
    pytest.skip("needs dnsmasq (package dnsmasq-base)", allow_module_level=True)

# pylint: disable=wrong-import-position
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils import _attach, _facts
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine

from hostclean import delete_cached


def _plugin_releases() -> dict:
    """Debian 12's 1.1.1, and every other release setup prepared (.build/releases/plugins-*.json)."""
    releases = {"1.1.1": DEBIAN_PLUGINS}
    for path in sorted((ROOT / ".build" / "releases").glob("plugins-*.json")):
        described = json.loads(path.read_text())
        releases.setdefault(described["cnit_plugin_release"], described["cnit_plugin_dir"])
    extra = os.environ.get("CNIKIT_TEST_DHCP_PLUGINS")  # release=dir, for a release tried by hand
    if extra:
        release, directory = extra.split("=", 1)
        releases[release] = directory
    return releases


RELEASES = _plugin_releases()
PREFIX = "cnit-e-"  # host_guard (conftest.py) removes what carries it


@pytest.fixture(params=sorted(RELEASES))
def release(request):
    return request.param


@pytest.fixture
def lab(tmp_path, release, subnet):
    """The server on a bridge of the test, the daemon of the release, an engine; stopped and
    attachments deleted in teardown (the namespaces and links go with host_guard)."""
    suffix = subnet.split(".")[2]
    server = DhcpServer(tmp_path, f"{PREFIX}dhcpd{suffix}", f"{PREFIX}dbr{suffix}", f"{PREFIX}dsv{suffix}",
                        subnet)
    daemon = DhcpDaemon(RELEASES[release], tmp_path, str(tmp_path / "dhcp.sock"))
    engine = Engine([RELEASES[release]], str(tmp_path / "cache"), timeout=30)
    try:
        server.start()
        daemon.start()
        yield server, daemon, engine
    finally:
        delete_cached(engine)
        daemon.stop()
        server.stop()


def _bridge_network(server: DhcpServer, daemon: DhcpDaemon, name: str = "cnit-dhcp-br"):
    return parse_network_list({"cniVersion": "1.0.0", "name": name, "plugins": [
        {"type": "bridge", "bridge": server.bridge, "isGateway": False, "ipMasq": False,
         "ipam": {"type": "dhcp", "daemonSocketPath": daemon.socket_path}}]})


def _address(result: dict) -> str:
    return result["ips"][0]["address"].split("/")[0]


def test_bridge_attachment_gets_a_lease_and_a_rerun_is_unchanged(lab, make_netns):
    server, daemon, engine = lab
    network = _bridge_network(server, daemon)
    attachment = Attachment(network.name, "cnit-e-c1", make_netns(), "eth0")
    address = _address(engine.add(network, attachment))
    assert server.in_range(address)
    assert address in server.leases()
    assert engine.check(network, attachment).ran
    assert engine.delete(network, attachment) is True


def _client_id(network, attachment: Attachment) -> str:
    """The lease's name in the daemon's log: container ID, network name and ifname."""
    return f"{attachment.container_id}/{network.name}/{attachment.ifname}"


def _wait(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_bridge_del_ends_the_daemons_hold_but_no_dhcprelease_reaches_the_server(lab, make_netns):
    """What 1.1.1 and 1.9.1 really do on a bridge DEL: the bridge plugin deletes the interface
    before it calls IPAM DEL, so the daemon stops maintaining the lease but cannot send the
    DHCPRELEASE (it logs "failed to release DHCP lease"): the lease stays in the server's lease
    file until its lease time runs out (docs/user-guide.md)."""
    server, daemon, engine = lab
    network = _bridge_network(server, daemon)
    attachment = Attachment(network.name, "cnit-e-c1", make_netns(), "eth0")
    address = _address(engine.add(network, attachment))
    assert engine.delete(network, attachment) is True
    assert f"{_client_id(network, attachment)}: releasing lease" in daemon.log()
    assert f"{_client_id(network, attachment)}: failed to release DHCP lease" in daemon.log()
    time.sleep(2)
    assert "DHCPRELEASE" not in server.log()
    assert address in server.leases()


def test_macvlan_attachment_on_a_port_of_the_test_bridge_gets_a_lease(lab, make_netns, release):
    """macvlan calls IPAM DEL while the interface still exists: 1.1.1's daemon sends the
    DHCPRELEASE and the server frees the lease; 1.9.1's reports no failure, yet the server
    frees nothing (docs/user-guide.md)."""
    server, daemon, engine = lab
    master, port = server.veth.replace("dsv", "dmv"), server.veth.replace("dsv", "dmp")
    subprocess.run(["ip", "link", "add", master, "type", "veth", "peer", "name", port], check=True)
    probe = f"{PREFIX}mvprobe"
    if subprocess.run(["ip", "link", "add", probe, "link", master, "type", "macvlan"],
                      capture_output=True, check=False).returncode:
        pytest.skip("the kernel has no macvlan")
    subprocess.run(["ip", "link", "del", probe], check=True)
    subprocess.run(["ip", "link", "set", port, "master", server.bridge, "up"], check=True)
    subprocess.run(["ip", "link", "set", master, "up"], check=True)
    network = parse_network_list({"cniVersion": "1.0.0", "name": "cnit-dhcp-mv", "plugins": [
        {"type": "macvlan", "master": master, "mode": "bridge",
         "ipam": {"type": "dhcp", "daemonSocketPath": daemon.socket_path}}]})
    first, second = (Attachment(network.name, f"cnit-e-m{n}", make_netns(), "eth0") for n in (1, 2))
    addresses = {_address(engine.add(network, first)), _address(engine.add(network, second))}
    assert len(addresses) == 2 and all(server.in_range(a) for a in addresses)
    assert engine.check(network, first).ran
    assert engine.delete(network, first) is True and engine.delete(network, second) is True
    assert "failed to release" not in daemon.log(), daemon.log()
    if release == "1.1.1":
        assert _wait(lambda: not set(server.leases()) & addresses, 5), server.log()
    else:
        time.sleep(2)
        assert set(server.leases()) == addresses, server.log() + daemon.log()


def test_del_after_a_daemon_restart_succeeds(lab, make_netns):
    server, daemon, engine = lab
    network = _bridge_network(server, daemon)
    attachment = Attachment(network.name, "cnit-e-c1", make_netns(), "eth0")
    engine.add(network, attachment)
    daemon.stop()
    daemon.start()  # knows nothing of the lease taken before
    assert engine.delete(network, attachment) is True
    assert engine.cache.entries()[0] == []


def test_add_without_the_daemon_says_so_once_and_the_next_attach_says_what_it_cleans_up(lab, make_netns):
    """With no daemon on the socket, ADD fails at the IPAM and so does its rollback's DEL, with the
    same error: said once, with what may be left and the intent marker that records it; cni_info's
    attachment facts warn of that marker, and the next attach, once the daemon runs, says that it
    deleted what the unfinished ADD left before adding the attachment."""
    server, daemon, engine = lab
    daemon.stop()
    network = _bridge_network(server, daemon)
    desired = _attach.Desired(lambda: network, Attachment(network.name, "cnit-e-c1", make_netns(), "eth0"))
    marker = os.path.join(engine.cache.directory, "cnikit-pending", f"{network.name}-cnit-e-c1-eth0")

    [failure] = _attach.converge_all(engine, [desired])
    message = str(failure)
    assert "its rollback (DEL) failed the same way: plugin bridge failed (ADD)" in message, message
    assert message.count("error dialing DHCP daemon") == 1, message
    assert "rollback also failed" not in message and marker in message, message
    assert failure.to_dict()["rollback_errors"][0]["verb"] == "DEL"
    facts, warnings = _facts.attachment_facts(engine.cache)
    assert facts == [] and len(warnings) == 1 and marker in warnings[0], warnings

    daemon.start()
    [outcome] = _attach.converge_all(engine, [desired])
    assert outcome.action == "repaired"
    assert [w for w in outcome.warnings if "an earlier ADD of this attachment did not finish" in w], outcome.warnings
    assert server.in_range(_address(outcome.result))
    assert _facts.attachment_facts(engine.cache)[1] == []
    assert engine.delete(network, desired.attachment) is True


def test_check_after_a_daemon_restart_takes_the_lease_again(lab, make_netns, release):
    """From v1.2.0 the plugin's CHECK asks the daemon to allocate, which a restarted daemon,
    knowing no lease for the attachment, does from inside the namespace (the server gives the
    same address to the same client ID), renewing it from then on; so a re-run of cni_attach,
    which CHECKs, resumes the renewal a restart stopped. Before v1.2.0 CHECK is withheld (see
    the next test): the engine verifies the attachment in its namespace instead, and the daemon
    takes no lease."""
    server, daemon, engine = lab
    network = _bridge_network(server, daemon)
    attachment = Attachment(network.name, "cnit-e-c1", make_netns(), "eth0")
    address = _address(engine.add(network, attachment))
    daemon.stop()
    daemon.start()
    before = daemon.log().count(f"{_client_id(network, attachment)}: lease acquired")
    report = engine.check(network, attachment)
    assert report.ran
    taken = daemon.log().count(f"{_client_id(network, attachment)}: lease acquired") - before
    if release == "1.1.1":
        assert list(report.withheld) == ["dhcp-lease-per-check"] and taken == 0
    else:
        assert report.withheld == {} and taken == 1
    assert server.leases().get(address) is not None
    assert engine.delete(network, attachment) is True


def _open_files(daemon: DhcpDaemon) -> int:
    return len(os.listdir(f"/proc/{daemon.process.pid}/fd"))


def test_reruns_of_cni_attach_never_grow_the_daemon(lab, make_netns, release, tmp_path, capsys):
    """Issue 28: up to v1.1.1 the daemon answers every CHECK with another lease (another renewal
    loop holding the namespace and a socket open) and never stops the one it forgets, even after
    DEL, until it runs out of file descriptors. Re-runs of cni_attach must leave the daemon's
    leases and open files as the ADD left them; with 1.1.1 the task says once that CHECK is
    withheld, and still finds a missing address."""
    import module_harness  # pylint: disable=import-outside-toplevel
    from ansible_collections.cnikit.cni.plugins.modules import cni_attach  # pylint: disable=import-outside-toplevel

    server, daemon, engine = lab
    network = _bridge_network(server, daemon)
    paths = {"cni_path": engine.executor.cni_path, "cache_dir": engine.cache.directory, "conf_dir": str(tmp_path / "net.d")}
    netns = make_netns()
    attach = {"config": network.raw, "netns": netns, "container_id": "cnit-e-c1", **paths}
    added = module_harness.run_module(cni_attach, capsys, **attach)
    assert added["action"] == "added", added
    client = f"cnit-e-c1/{network.name}/eth0"
    open_files = _open_files(daemon)
    for _rerun in range(4):
        again = module_harness.run_module(cni_attach, capsys, **attach)
        assert again["action"] == "unchanged" and again["ips"] == added["ips"], again
    # A leaked lease holds its namespace and socket for good; a CHECK of 1.9.1 wakes the lease's
    # loop, whose renewal opens a socket for a moment.
    time.sleep(1)
    assert _wait(lambda: _open_files(daemon) <= open_files, 10), (open_files, _open_files(daemon), daemon.log())
    assert daemon.log().count(f"{client}: acquiring lease") == 1, daemon.log()
    # (Ansible keeps the warnings of earlier module runs of this process: those about this
    # test's namespace are this test's.)
    ours = f"netns {os.path.basename(netns)}, ifname eth0)"
    withheld = [w for w in map(str, again.get("warnings", [])) if "CHECK is not sent to bridge with dhcp" in w and ours in w]
    assert len(withheld) == (1 if release == "1.1.1" else 0), again.get("warnings")
    assert all("the installed dhcp is v1.1.1)" in w for w in withheld), withheld
    if release == "1.1.1":
        subprocess.run(["ip", "-n", os.path.basename(netns), "addr", "flush", "dev", "eth0"], check=True)
        repaired = module_harness.run_module(cni_attach, capsys, **attach)
        assert repaired["action"] == "repaired", repaired
    gone = module_harness.run_module(cni_attach, capsys, state="absent", **attach)
    assert gone["action"] == "deleted", gone


def test_gc_of_a_vanished_namespace_ends_the_lease_renewal(lab, make_netns):
    """The daemon keeps renewing a lease from inside the namespace (its thread holds the
    namespace open after ``ip netns del``) until a DEL stops it: GC sends that DEL, which the
    plugin passes on to the daemon without the namespace."""
    server, daemon, engine = lab
    network = _bridge_network(server, daemon)
    netns = make_netns()
    attachment = Attachment(network.name, "cnit-e-c1", netns, "eth0")
    engine.add(network, attachment)
    subprocess.run(["ip", "netns", "del", os.path.basename(netns)], check=True)
    report = engine.gc(network, valid_attachments=[])
    assert report.errors == [] and [d["container_id"] for d in report.deleted] == ["cnit-e-c1"]
    # The lease's loop logs this as it leaves: no renewal follows.
    assert f"{_client_id(network, attachment)}: releasing lease" in daemon.log()


def test_modules_declare_attach_rerun_and_detach_a_dhcp_network(lab, make_netns, tmp_path, capsys):
    """cni_network and cni_attach as Ansible runs them: the network validates without the daemon
    warning (the daemon listens on its socket), the attachment gets a lease, a re-run is
    unchanged after a passing CHECK, and detaching deletes it."""
    import module_harness  # pylint: disable=import-outside-toplevel
    from ansible_collections.cnikit.cni.plugins.modules import cni_attach, cni_network  # pylint: disable=import-outside-toplevel

    server, daemon, engine = lab
    paths = {"cni_path": engine.executor.cni_path, "conf_dir": str(tmp_path / "net.d"), "cache_dir": engine.cache.directory}
    declared = module_harness.run_module(cni_network, capsys, name="cnit-dhcp-mod", cni_version="1.0.0", plugins=[
        {"type": "bridge", "bridge": server.bridge, "ipam": {"type": "dhcp", "daemonSocketPath": daemon.socket_path}}],
        **paths)
    assert declared["changed"] and not any("dhcp daemon" in w for w in declared.get("warnings", [])), declared
    netns = make_netns()
    added = module_harness.run_module(cni_attach, capsys, network="cnit-dhcp-mod", netns=netns, **paths)
    assert added["action"] == "added" and server.in_range(added["ips"][0].split("/")[0]), added
    again = module_harness.run_module(cni_attach, capsys, network="cnit-dhcp-mod", netns=netns, **paths)
    assert again["action"] == "unchanged" and not again["changed"] and again["ips"] == added["ips"], again
    gone = module_harness.run_module(cni_attach, capsys, network="cnit-dhcp-mod", netns=netns, state="absent", **paths)
    assert gone["action"] == "deleted", gone
