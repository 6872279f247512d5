# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_gc (garbage collection, and the attachments of a namespace) on the test host of tests/utils/cachehost.py."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _gc, _netns_task
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError


# -- namespaces ---------------------------------------------------------------------------------

def test_attachments_in_netns_match_both_spellings_and_the_exact_name(host):
    host.cache_entry("net1", "c1", "/run/netns/cnit-i-ab")
    host.cache_entry("net2", "c1", "/var/run/netns/cnit-i-ab")
    host.cache_entry("net1", "c2", "/var/run/netns/cnit-i-abc")
    host.cache_entry("net1", "c3", "/var/run/netns/cnit-i-a")

    found = _netns_task.attachments_in_netns(host.engine, "/var/run/netns/cnit-i-ab")

    assert sorted((e.network, e.container_id) for e in found) == [("net1", "c1"), ("net2", "c1")]


def test_delete_attachments_dels_with_the_cached_config_and_removes_the_entries(host):
    host.plugin()
    first = host.cache_entry("net1", "c1", "/var/run/netns/cnit-i-x")
    second = host.cache_entry("net2", "c1", "/var/run/netns/cnit-i-x", ifname="net1")

    entries = _netns_task.attachments_in_netns(host.engine, "/run/netns/cnit-i-x")
    deleted, errors = _netns_task.delete_attachments(host.engine, entries)

    assert errors == []
    assert deleted == [
        {"network": "net1", "container_id": "c1", "ifname": "eth0", "netns": "/var/run/netns/cnit-i-x", "managed": True},
        {"network": "net2", "container_id": "c1", "ifname": "net1", "netns": "/var/run/netns/cnit-i-x", "managed": True},
    ]
    dels = host.calls("DEL")
    assert [(c["stdin"]["name"], c["env"]["CNI_IFNAME"], c["env"]["CNI_NETNS"]) for c in dels] == [
        ("net1", "eth0", "/var/run/netns/cnit-i-x"), ("net2", "net1", "/var/run/netns/cnit-i-x")]
    assert dels[0]["stdin"]["prevResult"]["ips"][0]["address"] == "10.249.7.2/24"
    assert not first.exists() and not second.exists()


def test_delete_attachments_tries_every_entry_and_keeps_the_failed_ones(host):
    host.plugin()
    host.plugin("broken", DEL={"error": {"code": 11, "msg": "cannot tear down"}})
    broken_conf = {"cniVersion": "1.1.0", "name": "bad", "plugins": [{"type": "broken"}]}
    kept = host.cache_entry("bad", "c1", "/var/run/netns/cnit-i-x", conf=broken_conf)
    gone = host.cache_entry("good", "c1", "/var/run/netns/cnit-i-x")

    deleted, errors = _netns_task.delete_attachments(
        host.engine, _netns_task.attachments_in_netns(host.engine, "/var/run/netns/cnit-i-x"))

    assert [d["network"] for d in deleted] == ["good"]
    assert len(errors) == 1 and "cannot tear down" in str(errors[0])
    assert kept.exists()
    assert not gone.exists()


# -- garbage collection -------------------------------------------------------------------------

def test_gc_default_collects_only_attachments_whose_namespace_is_gone(host):
    host.plugin()
    host.conflist("net1")
    live, gone = host.netns("live"), host.netns("gone")
    host.cache_entry("net1", "c-live", live)
    stale = host.cache_entry("net1", "c-gone", gone)
    other_network = host.cache_entry("net2", "c-gone", gone)
    os.unlink(gone)
    networks, problems = _gc.gc_networks(str(host.conf), "net1")

    assert problems == []
    plan = _gc.gc_plan(host.engine.cache.entries(), networks[0], None)
    assert plan == [{"network": "net1", "container_id": "c-gone", "ifname": "eth0", "netns": gone, "managed": True}]
    assert host.calls("DEL") == []

    report = _gc.collect(host.engine, networks[0], None)

    assert report == {"collected": plan, "errors": []}
    assert not stale.exists() and other_network.exists()
    gc_calls = host.calls("GC")
    assert len(gc_calls) == 1
    assert gc_calls[0]["stdin"]["cni.dev/valid-attachments"] == [{"containerID": "c-live", "ifname": "eth0"}]
    assert _gc.collect(host.engine, networks[0], None)["collected"] == []


def test_gc_with_explicit_valid_attachments_collects_everything_else(host):
    host.plugin()
    host.conflist("net1")
    kept = host.cache_entry("net1", "c1", host.netns("a"))
    collected = host.cache_entry("net1", "c2", host.netns("b"))
    other_ifname = host.cache_entry("net1", "c1", host.netns("c"), ifname="net1")
    valid = _gc.valid_attachment_keys([{"container_id": "c1"}])
    network = _gc.gc_networks(str(host.conf), "net1")[0][0]

    assert [p["container_id"] + "/" + p["ifname"] for p in _gc.gc_plan(host.engine.cache.entries(), network, valid)] == [
        "c1/net1", "c2/eth0"]
    report = _gc.collect(host.engine, network, valid)

    assert sorted((c["container_id"], c["ifname"]) for c in report["collected"]) == [("c1", "net1"), ("c2", "eth0")]
    assert kept.exists() and not collected.exists() and not other_ifname.exists()
    assert host.calls("GC")[0]["stdin"]["cni.dev/valid-attachments"] == [{"containerID": "c1", "ifname": "eth0"}]


def test_gc_skips_a_network_with_disable_gc(host):
    host.plugin()
    host.conflist("net1", disableGC=True)
    entry = host.cache_entry("net1", "c1", str(host.root / "never-existed"))
    network = _gc.gc_networks(str(host.conf), "net1")[0][0]

    assert _gc.collect(host.engine, network, None) == {"collected": [], "errors": []}
    assert entry.exists()
    assert host.calls("DEL") == [] and host.calls("GC") == []


def test_gc_reports_a_failed_del_with_its_network_and_keeps_the_entry(host):
    host.plugin(DEL={"error": {"code": 11, "msg": "cannot tear down"}})
    host.conflist("net1")
    entry = host.cache_entry("net1", "c1", str(host.root / "never-existed"))
    network = _gc.gc_networks(str(host.conf), "net1")[0][0]

    report = _gc.collect(host.engine, network, None)

    assert report["collected"] == []
    assert [e["network"] for e in report["errors"]] == ["net1"]
    assert "cannot tear down" in report["errors"][0]["msg"]
    assert entry.exists()


def test_gc_reports_a_network_whose_plugin_is_missing_as_an_error(host):
    (host.conf / "10-lost.conflist").write_text(json.dumps(
        {"cniVersion": "1.1.0", "cniVersions": ["1.1.0"], "name": "lost", "plugins": [{"type": "missing"}]}))
    network = _gc.gc_networks(str(host.conf), "lost")[0][0]

    report = _gc.collect(host.engine, network, None)

    assert report["collected"] == [] and report["errors"][0]["network"] == "lost"
    assert 'failed to find plugin "missing"' in report["errors"][0]["msg"]


def test_orphaned_networks_are_the_cached_ones_conf_dir_no_longer_declares(host):
    host.conflist("net1")
    host.cache_entry("net1", "c1", host.netns("a"))
    host.cache_entry("retired", "c1", host.netns("b"))
    host.cache_entry("gone-too", "c2", host.netns("c"))

    entries, _problems = host.engine.cache.entries()
    assert _gc.orphaned_networks(entries, {"net1"}) == ["gone-too", "retired"]
    assert _gc.orphaned_networks(entries, {"net1", "retired", "gone-too"}) == []


def test_gc_of_an_orphaned_network_dels_each_stale_attachment_with_its_own_cached_config(host):
    host.plugin()
    live, gone = host.netns("live"), host.netns("gone")
    older = {"cniVersion": "1.0.0", "name": "retired",
             "plugins": [{"type": "noop", "debugFile": str(host.bin / "noop.debug.json"), "generation": 1}]}
    kept = host.cache_entry("retired", "c-live", live)
    stale_new = host.cache_entry("retired", "c-new", gone)
    stale_old = host.cache_entry("retired", "c-old", gone, conf=older)
    os.unlink(gone)

    assert [p["container_id"] for p in _gc.gc_plan_orphaned(host.engine.cache.entries(), "retired", None)] == ["c-new", "c-old"]
    assert host.calls() == []
    report = _gc.collect_orphaned(host.engine, "retired", None)

    assert report["errors"] == []
    assert sorted((c["network"], c["container_id"]) for c in report["collected"]) == [
        ("retired", "c-new"), ("retired", "c-old")]
    dels = {c["env"]["CNI_CONTAINERID"]: c["stdin"] for c in host.calls("DEL")}
    assert (dels["c-new"]["cniVersion"], dels["c-new"].get("generation")) == ("1.1.0", None)
    assert (dels["c-old"]["cniVersion"], dels["c-old"]["generation"]) == ("1.0.0", 1)
    assert host.calls("GC") == [], "an orphaned network has no current list to send GC to"
    assert kept.exists() and not stale_new.exists() and not stale_old.exists()


def test_gc_of_an_orphaned_network_takes_only_dead_namespaces_that_nothing_protects(host):
    """valid_attachments names the attachments of the declared networks: for a network only the
    cache knows (maybe another runtime's), it protects but never condemns a live attachment."""
    host.plugin()
    live, gone = host.netns("live"), host.netns("gone")
    unlisted_live = host.cache_entry("retired", "c-live", live)
    listed_dead = host.cache_entry("retired", "c-listed", gone)
    opted_out = host.cache_entry("retired", "c-nogc", gone, conf={
        "cniVersion": "1.1.0", "name": "retired", "disableGC": True, "plugins": [{"type": "noop"}]})
    stale = host.cache_entry("retired", "c-stale", gone)
    os.unlink(gone)
    valid = _gc.valid_attachment_keys([{"container_id": "c-listed"}])

    assert [p["container_id"] for p in _gc.gc_plan_orphaned(host.engine.cache.entries(), "retired", valid)] == ["c-stale"]
    report = _gc.collect_orphaned(host.engine, "retired", valid)

    assert [c["container_id"] for c in report["collected"]] == ["c-stale"]
    assert unlisted_live.exists() and listed_dead.exists() and opted_out.exists() and not stale.exists()
    assert [c["env"]["CNI_CONTAINERID"] for c in host.calls("DEL")] == ["c-stale"]


def test_gc_of_an_orphaned_network_reports_a_failed_del_and_keeps_the_entry(host):
    host.plugin("broken", DEL={"error": {"code": 11, "msg": "cannot tear down"}})
    conf = {"cniVersion": "1.1.0", "name": "retired", "plugins": [{"type": "broken"}]}
    entry = host.cache_entry("retired", "c1", str(host.root / "never-existed"), conf=conf)

    report = _gc.collect_orphaned(host.engine, "retired", None)

    assert report["collected"] == []
    assert [e["network"] for e in report["errors"]] == ["retired"]
    assert "cannot tear down" in report["errors"][0]["msg"]
    assert entry.exists()


def test_gc_networks_takes_each_name_once_in_libcni_order_and_reports_broken_files(host):
    host.conflist("net1", file="10-a.conflist")
    host.conflist("net1", file="20-b.conflist", disableGC=True)
    host.conflist("net2", file="30-c.conflist")
    (host.conf / "05-broken.conflist").write_text("{not json")

    networks, problems = _gc.gc_networks(str(host.conf), None)

    assert [(n.name, os.path.basename(n.source)) for n in networks] == [("net1", "10-a.conflist"), ("net2", "30-c.conflist")]
    assert [os.path.basename(p.path) for p in problems] == ["05-broken.conflist"]


def test_gc_networks_names_a_missing_network(host):
    host.conflist("net1")
    with pytest.raises(ConfigError, match="network: no network with this name .*'nope'"):
        _gc.gc_networks(str(host.conf), "nope")


@pytest.mark.parametrize("items, path, value", [
    ([{"container_id": "bad/id"}], "valid_attachments[0].container_id", "bad/id"),
    ([{"container_id": "c1"}, {"container_id": "c2", "ifname": "way-too-long-ifname"}],
     "valid_attachments[1].ifname", "way-too-long-ifname"),
    ([{"ifname": "eth0"}], "valid_attachments[0].container_id", None),
])
def test_valid_attachment_keys_names_the_bad_field(items, path, value):
    with pytest.raises(ConfigError) as error:
        _gc.valid_attachment_keys(items)
    assert error.value.path == path and error.value.value == value


def test_valid_attachment_keys_default_the_ifname():
    assert _gc.valid_attachment_keys([{"container_id": "c1"}, {"container_id": "c2", "ifname": "net1"}]) == [
        ("c1", "eth0"), ("c2", "net1")]


# -- another runtime's attachments (foreign cache entries) ------------------------------------

def test_gc_never_collects_another_runtimes_attachments_in_any_mode(host):
    host.plugin()
    host.conflist("net1")
    gone = host.netns("gone")
    live_foreign = host.cache_entry("net1", "podman1", host.netns("live"), managed=False, cache_netns=False)
    dead_foreign = host.cache_entry("net1", "podman2", gone, managed=False, cache_netns=False)
    nameless = host.cache_entry("net1", "podman3", "", managed=False, cache_netns=False)
    ours = host.cache_entry("net1", "ours", gone)
    os.unlink(gone)
    network = _gc.gc_networks(str(host.conf), "net1")[0][0]

    for valid in (None, _gc.valid_attachment_keys([{"container_id": "other"}])):
        plan = _gc.gc_plan(host.engine.cache.entries(), network, valid)
        assert [p["container_id"] for p in plan] == ["ours"]
    report = _gc.collect(host.engine, network, _gc.valid_attachment_keys([{"container_id": "x"}]))

    assert [c["container_id"] for c in report["collected"]] == ["ours"] and not ours.exists()
    assert live_foreign.exists() and dead_foreign.exists() and nameless.exists()
    sent = host.calls("GC")[0]["stdin"]["cni.dev/valid-attachments"]
    assert {v["containerID"] for v in sent} == {"x", "podman1", "podman2", "podman3"}
    assert {(i["container_id"], i["netns_exists"]) for i in _gc.left_alone(host.engine.cache.entries(), "net1")} == {
        ("podman1", True), ("podman2", False), ("podman3", None)}


def test_an_explicit_list_that_leaves_out_a_live_foreign_attachment_is_reported(host):
    gone = host.netns("gone")
    host.cache_entry("net1", "podman1", host.netns("live"), managed=False, cache_netns=False)
    host.cache_entry("net1", "podman2", gone, managed=False)
    host.cache_entry("net1", "listed", host.netns("x"), managed=False)
    os.unlink(gone)
    valid = _gc.valid_attachment_keys([{"container_id": "listed"}])
    assert [i["container_id"] for i in _gc.foreign_left_out(host.engine.cache.entries(), "net1", valid)] == ["podman1"]
    assert _gc.foreign_left_out(host.engine.cache.entries(), "net1", None) == []


def test_an_entry_that_names_no_namespace_is_not_taken_for_gone(host):
    host.conf.joinpath("unused").write_text("")
    host.cache_entry("retired", "nameless", "", cache_netns=False)
    assert _gc.gc_plan_orphaned(host.engine.cache.entries(), "retired", None) == []


def test_an_unusable_entry_is_never_collected_and_is_sent_to_gc_as_valid(host):
    host.plugin()
    host.conflist("net1")
    truncated = host.cache.joinpath("results", "net1-ctr-9-eth0")
    truncated.write_text('{"kind":"cniCacheV1","containerId":"ctr-9"')  # a runtime crashed mid-write
    host.cache.joinpath("results", "net10-c1-eth0").write_text("")  # another network's
    network = _gc.gc_networks(str(host.conf), "net1")[0][0]

    assert _gc.gc_plan(host.engine.cache.entries(), network, []) == []
    report = _gc.collect(host.engine, network, [])

    assert report == {"collected": [], "errors": []} and truncated.exists()
    sent = host.calls("GC")[0]["stdin"]["cni.dev/valid-attachments"]
    # The file name is <network>-<container ID>-<ifname>, and both may hold '-': every reading is kept.
    assert sent == [{"containerID": "ctr", "ifname": "9-eth0"}, {"containerID": "ctr-9", "ifname": "eth0"}]
    (unusable,) = _gc.unusable_entries(host.engine.cache.entries(), "net1")
    assert (unusable["network"], unusable["file"]) == ("net1", str(truncated)) and "not JSON" in unusable["reason"]
    assert unusable["keys"] == [{"container_id": "ctr", "ifname": "9-eth0"}, {"container_id": "ctr-9", "ifname": "eth0"}]


def test_networks_only_another_runtime_cached_are_not_orphaned(host):
    # containerd attaches every pod to its built-in cni-loopback network, which no file declares.
    host.conflist("net1")
    host.cache_entry("cni-loopback", "4f1c", host.netns("pod"), ifname="lo", managed=False)
    host.cache_entry("retired", "c1", host.netns("b"))
    host.cache_entry("retired", "podman1", host.netns("c"), managed=False)

    entries, _problems = host.engine.cache.entries()
    assert _gc.orphaned_networks(entries, {"net1"}) == ["retired"]
