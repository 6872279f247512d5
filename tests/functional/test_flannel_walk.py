# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""flannel's walk as a kubelet host runs it (flannel -> bridge -> host-local, then portmap),
through cni_network and cni_attach, with the real bridge, host-local and portmap binaries of the
run's plugin release and a STAND-IN for flannel's plugin: no registry these machines reach
packages flannel, so tests/utils/flannel_standin.py, which follows flannel's documented contract,
is installed as ``flannel`` beside them.

The conflist is flannel's documented ``10-flannel.conflist`` (network ``cbr0``, cniVersion
0.3.1) plus what keeps the test on its own ground: the subnet file and flannel's data dir under
the test's directory, the delegate's bridge ``cnit-fl-br0``, host-local's data dir, a private
subnet. Results are cached where kubelet's libcni caches them (``--cni-cache-dir``,
/var/lib/cni/cache, under the test's directory). FLANNEL_IPMASQ=true, as flanneld writes it when
it masquerades itself, makes flannel hand the bridge ``ipMasq: false``: no masquerading rule is
made. ``net.ipv4.ip_forward`` (set by the bridge as gateway) is restored by conftest's host_guard."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import hostclean
import pytest
import releases
import script_plugin
from module_harness import run_module

from ansible_collections.cnikit.cni.plugins.module_utils._engine import Engine
from ansible_collections.cnikit.cni.plugins.modules import cni_attach, cni_network

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")

STANDIN = Path(__file__).resolve().parents[1] / "utils" / "flannel_standin.py"
PREFIX = "cnit-fl-"
BRIDGE = "cnit-fl-br0"
FLANNEL_NETWORK, FLANNEL_SUBNET, FLANNEL_MTU = "10.249.0.0/16", "10.249.7.1/24", 1450
GATEWAY = "10.249.7.1"
HOST_PORT, CONTAINER_PORT = 18097, 8080
# flannel's documented 10-flannel.conflist.
DOCUMENTED = {"name": "cbr0", "cniVersion": "0.3.1", "plugins": [
    {"type": "flannel", "delegate": {"hairpinMode": True, "isDefaultGateway": True}},
    {"type": "portmap", "capabilities": {"portMappings": True}}]}


def _pod(number: int) -> dict:
    """An attachment as kubelet makes it: the sandbox's 64-hex ID, its K8S_POD_* arguments."""
    container_id = hashlib.sha256(f"{PREFIX}pod-{number}".encode()).hexdigest()
    return {"netns": f"{PREFIX}{number}", "container_id": container_id,
            "args": {"IgnoreUnknown": "1", "K8S_POD_NAMESPACE": "default", "K8S_POD_NAME": f"web-{number}",
                     "K8S_POD_INFRA_CONTAINER_ID": container_id}}


@pytest.fixture
def flannel_host(tmp_path):
    """A plugin dir with the release's binaries and the stand-in, flanneld's subnet file, the
    conflist's and cache's directories. Teardown, whatever the test did: DEL what is still
    cached, drop portmap rules of the test's containers, remove the namespaces, the bridge,
    portmap's global chains (when no other container uses them) and the whole directory with
    flannel's data dir."""
    root = tmp_path / "host"
    plugin_dir = root / "opt/cni/bin"
    plugin_dir.mkdir(parents=True)
    for binary in Path(releases.PLUGIN_DIR).iterdir():
        (plugin_dir / binary.name).symlink_to(binary)
    script_plugin.install(STANDIN, plugin_dir / "flannel")
    subnet_file = root / "run/flannel/subnet.env"
    subnet_file.parent.mkdir(parents=True)
    subnet_file.write_text(f"FLANNEL_NETWORK={FLANNEL_NETWORK}\nFLANNEL_SUBNET={FLANNEL_SUBNET}\n"
                           f"FLANNEL_MTU={FLANNEL_MTU}\nFLANNEL_IPMASQ=true\n")
    host = SimpleNamespace(
        plugin_dir=str(plugin_dir), subnet_file=str(subnet_file), conf_dir=str(root / "etc/cni/net.d"),
        cache_dir=str(root / "var/lib/cni/cache"), flannel_data=root / "var/lib/cni/flannel",
        ipam_data=root / "var/lib/cni/networks", pods=[_pod(1), _pod(2)])
    try:
        yield host
    finally:
        hostclean.delete_cached(Engine([host.plugin_dir], host.cache_dir, timeout=30))
        ids = [pod["container_id"] for pod in host.pods]
        rules = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True, check=False).stdout
        hostclean.drop_portmap_rules([line for line in rules.splitlines() if any(i in line for i in ids)])
        hostclean.clean(PREFIX)
        shutil.rmtree(root, ignore_errors=True)


def _conflist(host, cni_version: str = "0.3.1") -> dict:
    """The documented conflist, with the test's own paths, bridge and host-local data dir."""
    flannel, portmap = (dict(plugin) for plugin in DOCUMENTED["plugins"])
    flannel.update(subnetFile=host.subnet_file, dataDir=str(host.flannel_data),
                   delegate=dict(flannel["delegate"], bridge=BRIDGE), ipam={"dataDir": str(host.ipam_data)})
    return dict(DOCUMENTED, cniVersion=cni_version, plugins=[flannel, portmap])


def _declare(host, capsys, **options) -> dict:
    return run_module(cni_network, capsys, name="cbr0", config=_conflist(host, **options),
                      filename="10-flannel.conflist", conf_dir=host.conf_dir, cni_path=[host.plugin_dir])


def _attach(host, capsys, **options) -> dict:
    """cni_attach of both pods, the first publishing HOST_PORT, with kubelet's cache dir."""
    first, second = host.pods
    mapping = {"portMappings": [{"hostPort": HOST_PORT, "containerPort": CONTAINER_PORT, "protocol": "tcp"}]}
    return run_module(cni_attach, capsys, network="cbr0", conf_dir=host.conf_dir, cache_dir=host.cache_dir,
                      cni_path=[host.plugin_dir], create_netns=True,
                      attachments=[dict(first, capability_args=mapping), second], **options)


def _actions(result: dict) -> list:
    assert not result.get("failed"), result
    return [item["action"] for item in result["attachments"]]


def _in_netns(netns: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True, text=True, check=False)


def _nat_rules() -> str:
    return subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True, check=True).stdout


def _fetch_through_mapping(netns: str, address: str) -> bytes:
    """Serve one connection in ``netns`` on CONTAINER_PORT and connect to it from the host
    through portmap's mapping on 127.0.0.1:HOST_PORT (loopback and the test's bridge only)."""
    server = subprocess.Popen(  # pylint: disable=consider-using-with
        ["ip", "netns", "exec", netns, "python3", "-c",
         "import socket\n"
         f"s = socket.create_server(('{address}', {CONTAINER_PORT}))\n"
         "print('ready', flush=True)\n"
         "c, _ = s.accept(); c.sendall(b'served by the pod'); c.close()"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", HOST_PORT), timeout=2) as connection:
                    return connection.recv(100)
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        server.kill()
        server.wait()


def test_flannel_standin_walk_attach_rerun_ping_portmap_detach(flannel_host, capsys):
    host = flannel_host
    declared = _declare(host, capsys)
    assert declared["changed"] and not declared.get("failed"), declared
    assert Path(declared["path"]).name == "10-flannel.conflist"
    # A third-party plugin: accepted, found in the plugin dir, and its keys left to it.
    assert [(w["path"], w["value"]) for w in declared["validation_warnings"]] == [("plugins[0].type", "flannel")]

    added = _attach(host, capsys)
    assert _actions(added) == ["added", "added"]
    first, second = added["attachments"]
    for item, pod in zip(added["attachments"], host.pods):
        assert item["result"]["cniVersion"] == "0.3.1"
        assert item["ips"][0].startswith("10.249.7.") and item["ips"][0].endswith("/24")
        # flannel's delegate configuration, saved where its DEL reads it back.
        delegated = json.loads((host.flannel_data / pod["container_id"]).read_text())
        assert delegated == {
            "name": "cbr0", "cniVersion": "0.3.1", "type": "bridge", "bridge": BRIDGE, "hairpinMode": True,
            "isDefaultGateway": True, "isGateway": True, "ipMasq": False, "mtu": FLANNEL_MTU,
            "ipam": {"type": "host-local", "dataDir": str(host.ipam_data), "ranges": [[{"subnet": "10.249.7.0/24"}]],
                     "routes": [{"dst": FLANNEL_NETWORK}]}}
        # kubelet's layout: <cache dir>/results/<network>-<container ID>-<ifname>, libcni's format.
        entry = json.loads(Path(host.cache_dir, "results", f"cbr0-{pod['container_id']}-eth0").read_text())
        assert (entry["kind"], entry["networkName"], entry["containerId"], entry["ifName"]) == \
            ("cniCacheV1", "cbr0", pod["container_id"], "eth0")
        assert json.loads(base64.b64decode(entry["config"])) == _conflist(host)
        assert dict(entry["cniArgs"]) == pod["args"]
        mappings = entry.get("capabilityArgs", {}).get("portMappings", [])
        assert [m["hostPort"] for m in mappings] == ([HOST_PORT] if pod is host.pods[0] else [])

    # The bridge's network: the MTU flanneld gave, a default route through the bridge.
    netns1, netns2 = (pod["netns"] for pod in host.pods)
    assert f"mtu {FLANNEL_MTU}" in _in_netns(netns1, "ip", "link", "show", "eth0").stdout
    assert f"default via {GATEWAY}" in _in_netns(netns1, "ip", "route").stdout
    address1, address2 = (item["ips"][0].split("/")[0] for item in (first, second))
    assert _in_netns(netns1, "ping", "-c", "1", "-W", "2", address2).returncode == 0
    assert _in_netns(netns2, "ping", "-c", "1", "-W", "2", address1).returncode == 0
    assert _fetch_through_mapping(netns1, address1) == b"served by the pod"
    # ipMasq false: nothing of the pods' subnet is masqueraded on its way out.
    assert not [rule for rule in _nat_rules().splitlines() if "POSTROUTING" in rule and "10.249." in rule]

    rerun = _attach(host, capsys)
    assert not rerun["changed"] and _actions(rerun) == ["unchanged", "unchanged"]
    assert [item["ips"] for item in rerun["attachments"]] == [item["ips"] for item in added["attachments"]]

    removed = _attach(host, capsys, state="absent")
    assert _actions(removed) == ["deleted", "deleted"]
    assert not list(Path(host.cache_dir, "results").iterdir())
    assert not list(host.flannel_data.iterdir())  # flannel's DEL used its saved configuration, then removed it
    assert not [p for p in (host.ipam_data / "cbr0").iterdir() if p.name[0].isdigit()]
    assert not any(pod["container_id"] in _nat_rules() for pod in host.pods)  # portmap's rules went with DEL
    assert "eth0" not in _in_netns(netns1, "ip", "link").stdout
    assert _actions(_attach(host, capsys, state="absent")) == ["absent", "absent"]


def test_flannel_standin_rerun_at_0_3_1_has_no_check_only_the_namespace_is_verified(flannel_host, capsys):
    """cniVersion 0.3.1 has no CHECK: a re-run takes a cached attachment whose configuration and
    arguments match as healthy while its namespace exists. A broken interface goes unnoticed;
    a namespace that is gone is repaired (DEL with flannel's saved configuration, then ADD), as
    check mode predicts, also when create_netns has created it anew, empty."""
    host = flannel_host
    _declare(host, capsys)
    assert _actions(_attach(host, capsys)) == ["added", "added"]
    netns1, netns2 = (pod["netns"] for pod in host.pods)

    assert _in_netns(netns1, "ip", "link", "del", "eth0").returncode == 0
    assert _actions(_attach(host, capsys)) == ["unchanged", "unchanged"]

    subprocess.run(["ip", "netns", "del", netns2], check=True)
    predicted = _attach(host, capsys, _ansible_check_mode=True)
    assert _actions(predicted) == ["unchanged", "repaired"] and predicted["created_netns"] == [netns2]
    assert not Path("/run/netns", netns2).exists()
    repaired = _attach(host, capsys)
    assert _actions(repaired) == ["unchanged", "repaired"]
    assert "eth0" in _in_netns(netns2, "ip", "link").stdout
    assert _actions(_attach(host, capsys)) == ["unchanged", "unchanged"]


def test_flannel_standin_check_from_0_4_0_does_not_reach_the_bridge(flannel_host, capsys):
    """From cniVersion 0.4.0 a re-run runs CHECK, but flannel's CHECK succeeds without asking its
    delegate (flannel does not implement it), and portmap checks only its rules: a pod whose
    interface was deleted still passes, as it does under kubelet with the real flannel."""
    host = flannel_host
    _declare(host, capsys, cni_version="0.4.0")
    assert _actions(_attach(host, capsys)) == ["added", "added"]
    assert _in_netns(host.pods[0]["netns"], "ip", "link", "del", "eth0").returncode == 0
    assert _actions(_attach(host, capsys)) == ["unchanged", "unchanged"]


def test_flannel_standin_failed_add_is_rolled_back_through_the_saved_configuration(flannel_host, capsys):
    """A subnet with one free address: the second pod's bridge ADD fails in host-local, and the
    rollback's DEL reaches the bridge through the configuration flannel saved, so nothing of the
    second pod is left (no saved file, no cache entry, no namespace the task created for it)."""
    host = flannel_host
    Path(host.subnet_file).write_text(f"FLANNEL_NETWORK={FLANNEL_NETWORK}\nFLANNEL_SUBNET=10.249.7.1/30\n"
                                      f"FLANNEL_MTU={FLANNEL_MTU}\nFLANNEL_IPMASQ=true\n")
    _declare(host, capsys)
    result = _attach(host, capsys, parallel=1)
    first, second = result["attachments"]
    assert result["failed"] and (first["action"], second["action"]) == ("added", "failed")
    assert "no IP addresses available" in second["msg"]
    assert [p.name for p in host.flannel_data.iterdir()] == [host.pods[0]["container_id"]]
    assert [p.name for p in Path(host.cache_dir, "results").iterdir()] == [f"cbr0-{host.pods[0]['container_id']}-eth0"]
    assert result["created_netns"] == [host.pods[0]["netns"]]
    assert not Path("/run/netns", host.pods[1]["netns"]).exists()
