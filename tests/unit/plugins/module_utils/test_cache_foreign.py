# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cache entries other runtimes write (issue 12), byte for byte as libcni 0.8, 1.0 and 1.1 write
them, read by _cache and judged by _gc and _facts: the namespace comes from the result's sandbox
when the entry has no ``netns`` (no libcni before 1.2 writes one), args and capability args
of other runtimes are kept as they are, other container-ID conventions are read from the JSON,
and garbage collection leaves them alone, live or not: the other runtime collects its own.

The format, from libcni's source (containernetworking/cni, libcni/api.go, ``cachedInfo`` and
``cacheAdd``, identical at v0.8.1, v1.0.1 and v1.1.2): ``json.Marshal`` of the struct, so one
compact line, no trailing newline, keys in the struct's order ``kind, containerId, config,
ifName, networkName, cniArgs, capabilityArgs, result`` (the last three ``omitempty``, and no
``netns`` field at all before v1.2.0); ``config`` is the conflist file's exact bytes in padded
standard base64; ``capabilityArgs`` and ``result`` are re-marshalled Go maps, so every key
inside them is sorted; Go escapes ``<``, ``>`` and ``&`` in strings. The result is the last
plugin's, in its own version: 0.4.0 results carry ``version`` on each IP and ``dns: {}``
(pkg/types/current at v0.8.1), 1.0.0 results do not (pkg/types/100).

Namespaces are stood in for by plain files outside /run/netns (see tests/utils/cachehost.py): live
while the file exists."""

from __future__ import annotations

import base64
import json
import os

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _cache, _facts, _gc, _netns_task
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine, network_at_add
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import AttachmentKey

HEX_ID = "5c876bbbf00f2cce41aedd81f0b0c8db9e1fc243546f767b9576e28e3693e419"
POD_UID = "0b3f6a3e-7c1e-4a59-9d6b-5f0f2c1e8a77"


def go_marshal(value) -> bytes:
    """encoding/json's output for a value whose maps are Go maps: compact, keys of maps sorted
    (callers pass the struct's top level as an ordered dict), HTML characters escaped."""
    def sort_maps(item):
        if isinstance(item, dict):
            return {key: sort_maps(item[key]) for key in sorted(item)}
        if isinstance(item, list):
            return [sort_maps(element) for element in item]
        return item

    text = json.dumps(value if not isinstance(value, dict) else {k: sort_maps(v) for k, v in value.items()},
                      separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def cached_info(container_id, config, ifname, network, args=None, capability_args=None, result=None) -> bytes:
    """libcni's cachedInfo as cacheAdd writes it at v0.8.1, v1.0.1 and v1.1.2 (no netns field)."""
    info = {"kind": "cniCacheV1", "containerId": container_id, "config": base64.b64encode(config).decode(),
            "ifName": ifname, "networkName": network}
    if args:
        info["cniArgs"] = args
    if capability_args:
        info["capabilityArgs"] = capability_args
    if result is not None:
        info["result"] = result
    return go_marshal(info)


def conflist_file(network, version, bridge) -> bytes:
    """A conflist as the runtime read it from disk: indented, with a trailing newline, so the
    cached bytes can be told from a re-serialisation."""
    conf = {"cniVersion": version, "name": network,
            "plugins": [{"type": "bridge", "bridge": bridge, "isGateway": True,
                         "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]]}},
                        {"type": "portmap", "capabilities": {"portMappings": True}}]}
    return (json.dumps(conf, indent=3) + "\n").encode()


def result_040(sandbox, ifname="eth0") -> dict:
    """A bridge chain's 0.4.0 result (pkg/types/current at v0.8.1)."""
    return {"cniVersion": "0.4.0", "dns": {},
            "interfaces": [{"name": "cni0", "mac": "32:93:c5:b3:87:fc"},
                           {"name": "veth38323967", "mac": "3e:a1:a4:0f:2d:55"},
                           {"name": ifname, "mac": "7e:82:7b:0f:7a:74", "sandbox": sandbox}],
            "ips": [{"version": "4", "interface": 2, "address": "10.88.0.5/16", "gateway": "10.88.0.1"}],
            "routes": [{"dst": "0.0.0.0/0"}]}


def result_100(sandbox, ifname="eth0") -> dict:
    """The same at 1.0.0 (pkg/types/100 at v1.0.1 and v1.1.2): no ``version`` on IPs."""
    result = result_040(sandbox, ifname)
    result["cniVersion"] = "1.0.0"
    for ip in result["ips"]:
        del ip["version"]
    return result


def containerd_libcni_08(sandbox):
    """containerd 1.4/1.5 (CRI plugin through go-cni, libcni v0.8.1): a 0.4.0 list, the sandbox ID
    as container ID, go-cni's K8S_POD_* labels behind IgnoreUnknown, portMappings and the pod
    annotations as capability args; sandbox /var/run/netns/cni-<uuid> (here: the stand-in)."""
    network = "containerd-net"
    args = [["IgnoreUnknown", "1"], ["K8S_POD_NAMESPACE", "default"], ["K8S_POD_NAME", "web-0"],
            ["K8S_POD_INFRA_CONTAINER_ID", HEX_ID], ["K8S_POD_UID", POD_UID]]
    caps = {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": ""}],
            "io.kubernetes.cri.pod-annotations": {"kubernetes.io/config.source": "api"}}
    return network, HEX_ID, "eth0", conflist_file(network, "0.4.0", "cni0"), args, caps, result_040(sandbox)


def crio_libcni_10(sandbox):
    """CRI-O 1.2x (ocicni, libcni v1.0.1): a 1.0.0 list, K8S_POD_* args behind IgnoreUnknown."""
    network = "crio"
    args = [["IgnoreUnknown", "1"], ["K8S_POD_NAMESPACE", "kube-system"], ["K8S_POD_NAME", "coredns-5d78c9869d-x7k2p"],
            ["K8S_POD_INFRA_CONTAINER_ID", HEX_ID], ["K8S_POD_UID", POD_UID]]
    return network, HEX_ID, "eth0", conflist_file(network, "1.0.0", "cni0"), args, None, result_100(sandbox)


def podman_libcni_11(sandbox):
    """podman 4.3.1 (Debian 12, libcni v1.1.2), as observed on a container it started: the full
    64-hex container ID, IgnoreUnknown and K8S_POD_NAME (the container's name), the network
    aliases as capability args."""
    network = "podman-net"
    args = [["IgnoreUnknown", "1"], ["K8S_POD_NAME", "cnit-p-web"]]
    caps = {"aliases": {network: [HEX_ID[:12]]}}
    return network, HEX_ID, "eth0", conflist_file(network, "1.0.0", "cni-podman1"), args, caps, result_100(sandbox)


def cnitool_libcni_11(sandbox):
    """cnitool (v1.1.2): container ID ``cnitool-`` + 20 hex digits, no args, CNI_IFNAME default."""
    network = "mynet"
    return network, "cnitool-77383ca0a0715733ca6f", "eth0", conflist_file(network, "1.0.0", "cni0"), None, None, \
        result_100(sandbox)


def nomad_libcni_10(sandbox):
    """A runtime keying attachments by a UUID, on a network whose name has dashes: the file
    name ``<network>-<id>-<ifname>`` cannot be split, only the JSON says which is which."""
    network = "nomad-bridge-net"
    return network, "2f4bc9a1-7d3e-4c5b-9f1a-0e6d8c2b4a11", "eth1", conflist_file(network, "1.0.0", "nomad"), \
        [["IgnoreUnknown", "true"]], None, result_100(sandbox, "eth1")


FORMATS = [containerd_libcni_08, crio_libcni_10, podman_libcni_11, cnitool_libcni_11, nomad_libcni_10]


class Cache:
    def __init__(self, root):
        self.root = root
        self.dir = root / "cache"
        (self.dir / "results").mkdir(parents=True)
        self.engine = Engine([str(root / "bin")], str(self.dir), timeout=5)

    def netns(self, name) -> str:
        path = self.root / name
        path.touch()
        return str(path)

    def write(self, fmt, sandbox):
        network, container_id, ifname, config, args, caps, result = fmt(sandbox)
        path = self.dir / "results" / f"{network}-{container_id}-{ifname}"
        path.write_bytes(cached_info(container_id, config, ifname, network, args, caps, result))
        return path, network, container_id, ifname, config, args, caps, result


@pytest.fixture
def cache(tmp_path):
    return Cache(tmp_path)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
def test_reader_takes_every_field_and_the_namespace_from_the_sandbox(cache, fmt):
    sandbox = cache.netns("ns")
    path, network, container_id, ifname, config, args, caps, result = cache.write(fmt, sandbox)
    assert b"netns" not in path.read_bytes().split(b'"result"')[0]  # as libcni < 1.2 writes it

    entry = _cache.ResultCache(str(cache.dir)).read(AttachmentKey(network, container_id, ifname))
    listed, problems = _cache.ResultCache(str(cache.dir)).entries()

    assert problems == [] and len(listed) == 1
    for found in (entry, listed[0]):
        assert (found.network, found.container_id, found.ifname) == (network, container_id, ifname)
        assert found.config == config
        assert found.cni_args == (args or [])
        assert found.capability_args == (caps or {})
        assert found.result == result
        assert (found.netns, found.effective_netns) == ("", sandbox)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
def test_a_del_of_a_foreign_entry_passes_back_its_args_and_namespace(cache, fmt):
    sandbox = cache.netns("ns")
    _path, network, container_id, ifname, _config, args, caps, _result = cache.write(fmt, sandbox)
    entry = _cache.ResultCache(str(cache.dir)).read(AttachmentKey(network, container_id, ifname))

    attachment = Attachment.from_cache(entry)

    assert attachment == Attachment(network, container_id, sandbox, ifname, args or [], caps or {})
    assert network_at_add(entry).name == network


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
def test_info_reports_foreign_attachments_with_their_namespace_and_liveness(cache, fmt):
    sandbox = cache.netns("ns")
    cache.write(fmt, sandbox)
    facts, problems = _facts.attachment_facts(cache.engine.cache)
    assert problems == []
    assert [(f["netns"], f["netns_exists"], f["ips"]) for f in facts] == [(sandbox, True, ["10.88.0.5/16"])]

    os.unlink(sandbox)
    facts, _problems = _facts.attachment_facts(cache.engine.cache)
    assert [(f["netns"], f["netns_exists"]) for f in facts] == [(sandbox, False)]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.__name__)
def test_gc_plans_leave_foreign_attachments_alone_live_or_gone(cache, fmt):
    """Another runtime collects its own: GC plans never name its attachments, in any mode, even
    once the sandbox is gone; naming the namespace (cni_netns, cni_attach) still finds them."""
    sandbox = cache.netns("ns")
    _path, network, container_id, ifname, config, *_rest = cache.write(fmt, sandbox)
    declared = parse_network_list(config)
    assert _netns_task.attachments_in_netns(cache.engine, sandbox)[0].container_id == container_id

    def planned() -> list:
        return (_gc.gc_plan(cache.engine.cache.entries(), declared, None) + _gc.gc_plan(cache.engine.cache.entries(), declared, [])
                + _gc.gc_plan_orphaned(cache.engine.cache.entries(), network, None))

    assert planned() == []
    os.unlink(sandbox)
    assert planned() == []


@pytest.mark.parametrize("managed", [False, True], ids=["foreign", "own"])
def test_an_entry_without_any_namespace_is_never_judged_gone(cache, managed):
    """No ``netns`` and no sandbox in the result (an IPAM-only chain, or a result trimmed by
    its last plugin): nothing says the namespace is gone, so GC keeps it, even an entry of
    this collection's own, and info says it does not know."""
    config = conflist_file("ipam-only", "1.0.0", "cni0")
    result = {"cniVersion": "1.0.0", "ips": [{"address": "10.88.0.9/16"}]}
    entry = _cache.CacheEntry("ipam-only", HEX_ID, "eth0", config=config, result=result, managed=managed)
    _cache.ResultCache(str(cache.dir)).write(entry)

    assert _gc.gc_plan(cache.engine.cache.entries(), parse_network_list(config), None) == []
    assert _gc.gc_plan_orphaned(cache.engine.cache.entries(), "ipam-only", None) == []
    facts, _problems = _facts.attachment_facts(cache.engine.cache)
    assert [(f["netns"], f["netns_exists"]) for f in facts] == [("", None)]


def test_the_namespace_is_the_sandbox_of_the_interface_named_ifname(cache):
    """A result may list several container interfaces (a plugin that adds a second one): the
    attachment's namespace is the sandbox of the one named ``ifName``, not the first found."""
    other, own = cache.netns("other"), cache.netns("own")
    config = conflist_file("twoif", "1.0.0", "cni0")
    result = {"cniVersion": "1.0.0",
              "interfaces": [{"name": "cni0", "mac": "32:93:c5:b3:87:fc"},
                             {"name": "eth0", "mac": "7e:82:7b:0f:7a:75", "sandbox": other},
                             {"name": "net1", "mac": "7e:82:7b:0f:7a:74", "sandbox": own}],
              "ips": [{"address": "10.88.0.7/16", "interface": 2}]}
    (cache.dir / "results" / f"twoif-{HEX_ID}-net1").write_bytes(
        cached_info(HEX_ID, config, "net1", "twoif", result=result))

    entry = _cache.ResultCache(str(cache.dir)).read(AttachmentKey("twoif", HEX_ID, "net1"))

    assert entry.effective_netns == own


def test_a_legacy_bare_result_is_left_alone(cache):
    """libcni before the cniCacheV1 kind (v0.7 and earlier) cached the bare result: no config to
    DEL with, so neither info nor GC acts on it, and GC leaves the file in place."""
    sandbox = cache.netns("gone")
    path = cache.dir / "results" / f"legacy-{HEX_ID}-eth0"
    path.write_bytes(go_marshal(result_040(sandbox)))
    os.unlink(sandbox)

    entries, problems = _cache.ResultCache(str(cache.dir)).entries()
    assert (entries, problems) == ([], [])
    assert _gc.gc_plan_orphaned(cache.engine.cache.entries(), "legacy", None) == []
    assert _gc.orphaned_networks(entries, set()) == []
    assert path.exists()


@pytest.fixture
def proc_fd_namespace():
    """A namespace path as buildah hands it to the plugins: ``/proc/<pid>/fd/<N>``, a descriptor
    its process holds open on the namespace (here this process's own, opened read-only: nothing
    is configured in it). Yields the path and a function that closes the descriptor."""
    fd = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    state = {"open": True}

    def close():
        if state["open"]:
            os.close(fd)
            state["open"] = False

    try:
        yield f"/proc/{os.getpid()}/fd/{fd}", close
    finally:
        close()


def test_a_buildah_proc_fd_namespace_is_read_and_live_while_its_descriptor_is_open(cache, proc_fd_namespace):
    """buildah 1.28 (libcni 1.1) caches no ``netns``: the path is the result's sandbox. It is
    read as given, live while the process holds the descriptor, gone once it is closed (the
    process ended), and, being another runtime's, never collected either way."""
    sandbox, close = proc_fd_namespace
    _path, network, container_id, ifname, config, *_rest = cache.write(podman_libcni_11, sandbox)
    entry = _cache.ResultCache(str(cache.dir)).read(AttachmentKey(network, container_id, ifname))
    assert (entry.netns, entry.effective_netns) == ("", sandbox)
    assert Attachment.from_cache(entry).netns == sandbox  # a DEL hands the plugins the same path
    declared = parse_network_list(config)

    facts, _problems = _facts.attachment_facts(cache.engine.cache)
    assert [(f["netns"], f["netns_exists"]) for f in facts] == [(sandbox, True)]
    assert [a.container_id for a in _netns_task.attachments_in_netns(cache.engine, sandbox)] == [container_id]

    close()
    facts, _problems = _facts.attachment_facts(cache.engine.cache)
    assert [(f["netns"], f["netns_exists"]) for f in facts] == [(sandbox, False)]
    assert _gc.gc_plan(cache.engine.cache.entries(), declared, None) == [] and _gc.gc_plan_orphaned(cache.engine.cache.entries(), network, None) == []


def test_an_own_attachment_in_a_proc_fd_namespace_is_collected_only_once_the_descriptor_is_closed(
        cache, proc_fd_namespace):
    sandbox, close = proc_fd_namespace
    conf = json.loads(conflist_file("net1", "1.0.0", "cni0"))
    entry = _cache.CacheEntry("net1", "c1", "eth0", config=json.dumps(conf).encode(), netns=sandbox,
                              result=result_100(sandbox), managed=True)
    _cache.ResultCache(str(cache.dir)).write(entry)
    declared = parse_network_list(conf)

    assert _gc.gc_plan(cache.engine.cache.entries(), declared, None) == []
    close()
    assert [(c["container_id"], c["netns"]) for c in _gc.gc_plan(cache.engine.cache.entries(), declared, None)] == [("c1", sandbox)]
