# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_facts (cni_info's facts) on the test host of tests/utils/cachehost.py."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest
from fake_executor import FakeExecutor

from ansible_collections.cnikit.cni.plugins.module_utils import _facts
from ansible_collections.cnikit.cni.plugins.module_utils._exec import DISTRO_PACKAGE, PluginExecutor


# -- facts --------------------------------------------------------------------------------------

def test_plugin_facts_in_search_order_with_versions_manifest_and_shadowing(host, tmp_path):
    host.plugin("bridge", VERSION={"supportedVersions": ["0.4.0", "1.0.0"]})
    host.plugin("vlan", VERSION={"error": {"code": 2, "msg": "broken binary"}})
    (host.bin / "README").write_text("not a plugin")
    (host.bin / ".cnikit-manifest.json").write_text(json.dumps(
        {"format": 1, "version": "1.9.1", "files": {"bridge": "ab" * 32}}))
    second = tmp_path / "bin2"
    second.mkdir()
    shutil.copy(host.bin / "bridge", second / "bridge")
    (second / "bridge").chmod(stat.S_IRWXU)

    facts, warnings = _facts.plugin_facts(PluginExecutor([str(host.bin), str(tmp_path / "missing"), str(second)], 20))

    assert warnings == []
    assert [(f["path"], f["shadowed"], f["set"], f["manifest_version"], f["release"]) for f in facts] == [
        (str(host.bin / "bridge"), False, "reference", "1.9.1", "1.9.1"), (str(host.bin / "vlan"), False, None, None, None),
        (str(second / "bridge"), True, None, None, None)]
    assert facts[0]["cni_versions"] == ["0.4.0", "1.0.0"] and facts[0]["error"] is None
    assert facts[1]["cni_versions"] is None and "broken binary" in facts[1]["error"]


def test_plugin_facts_name_each_binarys_set_and_its_version(host):
    for name in ("bridge", "flannel", "calico"):
        host.plugin(name)
    (host.bin / ".cnikit-manifest.json").write_text(json.dumps({"format": 2, "sets": {
        "reference": {"version": "1.9.1", "files": {"bridge": "ab" * 32}},
        "flannel": {"version": "v1.9.1-flannel1", "files": {"flannel": "cd" * 32}}}}))

    facts, warnings = _facts.plugin_facts(PluginExecutor([str(host.bin)], 20))

    assert warnings == []
    assert [(f["name"], f["set"], f["manifest_version"], f["release"]) for f in facts] == [
        ("bridge", "reference", "1.9.1", "1.9.1"), ("calico", None, None, None),
        ("flannel", "flannel", "v1.9.1-flannel1", None)]  # a set's own version is no release of the reference plugins


def test_plugin_facts_ask_the_executor_which_release_and_versions_a_binary_is(tmp_path):
    for name in ("bridge", "portmap"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    executor = FakeExecutor(versions={"bridge": ["0.4.0"]}, releases={"bridge": "1.1.1"}, directory=str(tmp_path))

    facts, _warnings = _facts.plugin_facts(executor)

    assert [(f["name"], f["cni_versions"], f["release"]) for f in facts] == [
        ("bridge", ["0.4.0"], "1.1.1"), ("portmap", ["1.0.0"], None)]
    assert executor.probes == [str(tmp_path / "bridge"), str(tmp_path / "portmap")]


@pytest.mark.skipif(not os.path.exists(os.path.join(DISTRO_PACKAGE[1], "bridge")),
                    reason="needs the distro's CNI plugins in /usr/lib/cni")
def test_plugin_facts_give_the_distro_binaries_the_release_validation_uses():
    executor = PluginExecutor([DISTRO_PACKAGE[1]], 20, run_command=lambda argv: (0, "1.1.1+ds1-3+b5", ""))

    facts, _warnings = _facts.plugin_facts(executor)

    bridge = next(f for f in facts if f["name"] == "bridge")
    assert bridge["set"] is None and bridge["release"] == executor.release("bridge") == "1.1.1"


def test_plugin_facts_warn_about_an_unreadable_manifest(host):
    host.plugin("bridge")
    (host.bin / ".cnikit-manifest.json").write_text("{")

    facts, warnings = _facts.plugin_facts(PluginExecutor([str(host.bin)], 20))

    assert facts[0]["manifest_version"] is None
    assert len(warnings) == 1 and ".cnikit-manifest.json is not valid JSON" in warnings[0]


def verdicts_of(host) -> _facts.NetworkVerdicts:
    return _facts.NetworkVerdicts(str(host.cache), keep=True)


def test_network_facts_validate_and_query_status(host):
    host.plugin(STATUS={"error": {"code": 50, "msg": "no leases left"}})
    host.conflist("ready-net", version="1.0.0", file="10-a.conflist")
    host.conflist("busy-net", file="20-b.conflist")
    host.conflist("ready-net", version="1.0.0", file="30-c.conflist")
    (host.conf / "40-d.conflist").write_text(json.dumps({"cniVersion": "1.0.0", "name": "lost",
                                                        "plugins": [{"type": "missing"}]}))
    (host.conf / "05-broken.conflist").write_text("{not json")

    facts = {os.path.basename(f["file"]): f for f in _facts.network_facts(str(host.conf), host.engine, verdicts_of(host))}

    assert list(facts) == ["05-broken.conflist", "10-a.conflist", "20-b.conflist", "30-c.conflist", "40-d.conflist"]
    assert facts["05-broken.conflist"]["name"] is None and facts["05-broken.conflist"]["valid"] is False
    first = facts["10-a.conflist"]
    assert (first["name"], first["cni_version"], first["plugins"], first["valid"], first["status"]) == (
        "ready-net", "1.0.0", ["noop"], True, None)
    busy = facts["20-b.conflist"]
    assert busy["valid"] is True
    assert busy["status"] == [{"plugin": "noop", "ready": False, "state": "not ready", "code": 50,
                               "msg": "no leases left"}]
    assert facts["30-c.conflist"]["valid"] is False
    assert "which libcni reads first" in facts["30-c.conflist"]["errors"][0]["message"]
    lost = facts["40-d.conflist"]
    assert lost["valid"] is False and lost["errors"][0]["path"] == "plugins[0].type"


def test_attachment_facts_with_addresses_liveness_and_unreadable_files(host):
    live = host.netns("live")
    host.cache_entry("net1", "c1", live, ips=("10.249.7.2/24", "fd00:249::2/64"))
    host.cache_entry("net1", "c2", str(host.root / "gone"))
    (host.cache / "results" / "net1-c3-eth0").write_text("")

    facts, problems = _facts.attachment_facts(host.engine.cache)

    assert [(f["container_id"], f["netns_exists"]) for f in facts] == [("c1", True), ("c2", False)]
    assert facts[0]["ips"] == ["10.249.7.2/24", "fd00:249::2/64"]
    assert facts[0]["mac"] == "0a:58:0a:f9:07:02"
    assert facts[0]["cache_file"].endswith("results/net1-c1-eth0")
    assert len(problems) == 1 and "net1-c3-eth0" in problems[0] and "empty" in problems[0]


def test_namespace_facts_use_the_canonical_path(monkeypatch):
    monkeypatch.setattr(_facts._netns, "list_named", lambda: ["cnit-i-a", "cnit-i-b"])
    assert _facts.namespace_facts() == [{"name": "cnit-i-a", "path": "/var/run/netns/cnit-i-a"},
                                        {"name": "cnit-i-b", "path": "/var/run/netns/cnit-i-b"}]


def test_a_libcni_1_1_entry_is_read_with_the_netns_of_its_sandbox(host):
    live = host.netns("podman-ns")
    host.cache_entry("net1", "f" * 64, live, managed=False, cache_netns=False)
    [fact], problems = _facts.attachment_facts(host.engine.cache)
    assert problems == []
    assert (fact["netns"], fact["netns_exists"], fact["managed"]) == (live, True, False)


def test_network_facts_give_the_version_a_list_with_only_cni_versions_runs_at(host):
    host.plugin()
    (host.conf / "10-multi.conflist").write_text(json.dumps(
        {"name": "multi", "cniVersions": ["0.4.0", "1.1.0"], "plugins": [{"type": "noop"}]}))

    (fact,) = _facts.network_facts(str(host.conf), host.engine, verdicts_of(host))

    assert fact["cni_version"] == "1.1.0" and fact["valid"] is True
