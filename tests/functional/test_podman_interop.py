# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The modules beside a real runtime (issue 12): Debian's podman 4.3 on its CNI backend (libcni
1.1, whose cache entries have no ``netns``), containers run from a busybox rootfs the test builds,
sharing the conf dir, /var/lib/cni and host-local's dataDir with the modules. Whatever a module
is asked to do, podman's running containers keep their eth0, their address, their reservation,
their cache entry and their port mapping, unless the task names them to be detached."""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from podman_host import CNI_CACHE, PLUGINS, PodmanHost, addresses_in, pings, restore, run, snapshot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
import modules  # noqa: E402  pylint: disable=wrong-import-position

HOST_CONFIG = ("/etc/containers", "/etc/cni/net.d")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(f"{PLUGINS}/bridge"),
                                reason="needs root and Debian's containernetworking-plugins")


@pytest.fixture(scope="module", autouse=True)
def host_config_untouched():
    """The system's podman and CNI configuration is never written; restored if it was."""
    missing = [tool for tool in ("podman", "runc", "busybox") if not shutil.which(tool)]
    if missing:
        pytest.fail(f"{', '.join(missing)} needed (podman, runc and busybox-static, installed by scripts/lib.sh)")
    before = snapshot(HOST_CONFIG)
    yield
    changed = restore(before, HOST_CONFIG)
    assert not changed, f"the tests changed the host's configuration (restored): {changed}"


@pytest.fixture
def podman(tmp_path):
    host = PodmanHost(tmp_path)
    yield host
    host.clean()


class Pod:
    """A network cni_network wrote, with two podman containers on it (the first one publishing a
    port on 127.0.0.1), and the modules' shared options."""

    def __init__(self, host: PodmanHost):
        self.host = host
        self.net = self.write_network()
        self.name = self.net["name"]
        self.port = 20000 + os.getpid() % 20000
        self.first = host.start(self.name, "-p", f"127.0.0.1:{self.port}:80")
        self.second = host.start(self.name)

    def module(self, module: str, **args) -> dict:
        args = {"conf_dir": str(self.host.conf_dir), "cache_dir": CNI_CACHE, "cni_path": [PLUGINS], **args}
        return modules.run(module, args, str(self.host.work))

    def write_network(self) -> dict:
        net = self.host.bridge_network()
        result = self.module("cni_network", name=net["name"], plugins=net["plugins"])
        assert not result.get("failed"), result
        return net

    def module_attachment(self, live: bool) -> str:
        """An attachment the modules make (into a namespace of the test); with ``live=False``, its
        namespace is deleted afterwards, so that garbage collection has something to collect."""
        netns = self.host.netns()
        container_id = f"{self.host.prefix}-{os.path.basename(netns)}"
        result = self.module("cni_attach", network=self.name, netns=netns, container_id=container_id)
        assert result.get("action") == "added", result
        if not live:
            run("ip", "netns", "del", os.path.basename(netns))
        return container_id

    def assert_intact(self, container, ported: bool = False, peer: bool = True) -> None:
        """The container's attachment works (reaches the gateway and, with ``peer``, the other
        container) and nothing of it was released or forgotten."""
        host = self.host
        assert addresses_in(container.netns) == [container.address], f"{container.name} lost its address"
        assert pings(container.netns, self.net["gateway"]), f"{container.name} cannot reach its gateway"
        other = self.second if container is self.first else self.first
        assert not peer or pings(container.netns, other.ip), f"{container.name} cannot reach {other.name}"
        assert host.reservation_owner(self.name, container.ip) == container.id, "its host-local reservation is gone"
        assert host.cache_file(self.name, container.id).exists(), "its cache entry is gone"
        if ported:
            assert host.portmap_rules(container.id), "its port mapping is gone"

    def assert_both_intact(self) -> None:
        self.assert_intact(self.first, ported=True)
        self.assert_intact(self.second)

    @property
    def podman_ids(self) -> set:
        return {self.first.id, self.second.id}


@pytest.fixture
def pod(podman):
    return Pod(podman)


def same_netns(path: str, other: str) -> bool:
    """The same named namespace, in either spelling (/var/run is /run)."""
    return bool(path) and path.replace("/var/run/", "/run/", 1) == other.replace("/var/run/", "/run/", 1)


def collected_ids(result: dict) -> set:
    return {item["container_id"] for item in result["collected"]}


def foreign_cache_entries(host: PodmanHost) -> list:
    """Cache entries in /var/lib/cni of networks this run did not make: a GC of every network
    would act on them too."""
    directory = Path(CNI_CACHE, "results")
    names = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    return [n for n in names if not n.startswith(tuple(f"{net}-" for net in host.networks))]


def skip_if_cache_shared_with_others(host: PodmanHost) -> None:
    foreign = foreign_cache_entries(host)
    if foreign:
        pytest.skip(f"{CNI_CACHE} holds attachments this test did not make ({foreign[:3]}...): a GC of every "
                    "network would act on them")


# -- networks: one configuration for both ---------------------------------------------------------

def test_podman_uses_a_network_cni_network_wrote(pod):
    conflist = pod.host.conf_dir / f"10-{pod.name}.conflist"
    inspect = json.loads(pod.host.podman("network", "inspect", pod.name).stdout)[0]
    assert (inspect["network_interface"], [s["subnet"] for s in inspect["subnets"]]) == \
        (pod.net["bridge"], [pod.net["subnet"]])
    cached = json.loads(pod.host.cache_file(pod.name, pod.first.id).read_text())
    assert base64.b64decode(cached["config"]) == conflist.read_bytes()
    assert "netns" not in cached  # libcni 1.1: the namespace is only in the result's sandbox
    pod.assert_both_intact()


@pytest.mark.parametrize("options", [[], ["--internal", "--disable-dns", "--subnet", "10.241.250.0/24"]],
                         ids=["defaults", "internal"])
def test_cni_network_and_cni_info_accept_a_network_podman_created(podman, options):
    name = podman.create_network(*options)
    path = podman.conf_dir / f"{name}.conflist"
    written = json.loads(path.read_bytes())
    shared = {"conf_dir": str(podman.conf_dir), "cni_path": [PLUGINS]}
    result = modules.run("cni_network", dict(shared, name=name, config=written, filename=path.name,
                                             validate="strict"), str(podman.work))
    assert not result.get("failed"), result
    assert result["validation_errors"] == []
    assert json.loads(path.read_bytes()) == written
    info = modules.run("cni_info", dict(shared, gather=["networks"], cache_dir=CNI_CACHE), str(podman.work))
    facts = [fact for fact in info["networks"] if fact["name"] == name]
    assert [(f["file"], f["valid"], f["errors"]) for f in facts] == [(str(path), True, [])]
    assert json.loads(podman.podman("network", "inspect", name).stdout)[0]["name"] == name


# -- cni_info -------------------------------------------------------------------------------------

def test_info_lists_podman_containers_as_live(pod):
    info = pod.module("cni_info", gather=["attachments"])
    facts = {a["container_id"]: a for a in info["attachments"] if a["network"] == pod.name}
    for container in (pod.first, pod.second):
        fact = facts[container.id]
        assert same_netns(fact["netns"], container.netns), fact
        assert fact["netns_exists"] is True, fact
        assert fact["ips"] == [container.address]


# -- cni_gc ---------------------------------------------------------------------------------------

def test_gc_of_the_network_keeps_podman_containers(pod):
    stale = pod.module_attachment(live=False)
    result = pod.module("cni_gc", network=pod.name)
    assert not result.get("failed"), result
    assert collected_ids(result) == {stale}
    pod.assert_both_intact()
    # The next attachment is not handed a running container's address, and podman's own
    # removal still finds everything it made.
    newcomer = pod.module_attachment(live=True)
    entry = json.loads(pod.host.cache_file(pod.name, newcomer).read_text())
    assert {ip["address"] for ip in entry["result"]["ips"]}.isdisjoint(
        {pod.first.address, pod.second.address})
    pod.host.podman("rm", "-f", "-t", "0", pod.first.id)
    assert not pod.host.cache_file(pod.name, pod.first.id).exists()
    assert pod.host.reservation_owner(pod.name, pod.first.ip) is None
    assert pod.host.portmap_rules(pod.first.id) == []


def test_gc_with_valid_attachments_leaving_podman_out_warns_and_keeps_them(pod):
    live, stale = pod.module_attachment(live=True), pod.module_attachment(live=False)
    valid = [{"container_id": live, "ifname": "eth0"}]
    planned = pod.module("cni_gc", network=pod.name, valid_attachments=valid, _ansible_check_mode=True)
    warned = json.dumps(planned.get("warnings", []))  # strings, or ansible-core 2.19's warning records
    assert pod.first.id in warned and pod.second.id in warned, planned
    assert collected_ids(planned) == {stale}
    result = pod.module("cni_gc", network=pod.name, valid_attachments=valid)
    assert not result.get("failed"), result
    warned = json.dumps(result.get("warnings", []))
    assert pod.first.id in warned and pod.second.id in warned, result
    assert collected_ids(result) == {stale}
    pod.assert_both_intact()
    assert pod.host.cache_file(pod.name, live).exists()


def test_gc_of_every_network_keeps_podman_containers(pod):
    skip_if_cache_shared_with_others(pod.host)
    stale = pod.module_attachment(live=False)
    result = pod.module("cni_gc")
    assert not result.get("failed"), result
    assert collected_ids(result) == {stale}
    pod.assert_both_intact()


def test_gc_orphaned_pass_keeps_podman_containers(pod, tmp_path):
    """A conf dir that does not declare podman's network: its attachments are 'orphaned' ones."""
    skip_if_cache_shared_with_others(pod.host)
    stale = pod.module_attachment(live=False)
    elsewhere = tmp_path / "other-net.d"
    elsewhere.mkdir()
    result = pod.module("cni_gc", conf_dir=str(elsewhere))
    assert not result.get("failed"), result
    assert pod.name in result["orphaned_networks"]
    assert collected_ids(result) == {stale}
    pod.assert_both_intact()


# -- cni_attach -----------------------------------------------------------------------------------

def test_attach_present_on_a_podman_attachment_leaves_it_working(pod):
    for _run in range(2):
        result = pod.module("cni_attach", network=pod.name, netns=pod.first.netns, container_id=pod.first.id)
        if result.get("failed"):
            assert pod.first.id in result["msg"] or "eth0" in result["msg"], result
        else:
            assert (result["action"], result["changed"]) == ("unchanged", False), result
            assert result["ips"] == [pod.first.address]
        pod.assert_both_intact()


def test_attach_absent_on_a_podman_attachment_detaches_it(pod):
    result = pod.module("cni_attach", network=pod.name, netns=pod.first.netns, container_id=pod.first.id,
                        state="absent")
    assert (result.get("action"), result.get("changed")) == ("deleted", True), result
    links = run("ip", "-n", os.path.basename(pod.first.netns), "-j", "link", "show").stdout
    assert [link["ifname"] for link in json.loads(links)] == ["lo"], "eth0 was left in the container"
    assert pod.host.reservation_owner(pod.name, pod.first.ip) is None
    assert not pod.host.cache_file(pod.name, pod.first.id).exists()
    assert pod.host.portmap_rules(pod.first.id) == []
    pod.assert_intact(pod.second, peer=False)
    removed = pod.host.podman("rm", "-f", "-t", "0", pod.first.id, check=False)
    assert removed.returncode == 0, removed.stderr


def test_second_network_on_a_taken_ifname_is_refused(pod):
    other = pod.write_network()
    result = pod.module("cni_attach", network=other["name"], netns=pod.first.netns, container_id=pod.first.id)
    assert result.get("failed"), result
    assert "eth0" in result["msg"], result
    pod.assert_both_intact()
    assert not pod.host.cache_file(other["name"], pod.first.id).exists()
    assert not (pod.host.data_dir / other["name"] / pod.first.ip).exists()
    assert not list((pod.host.data_dir / other["name"]).glob("10.*"))
