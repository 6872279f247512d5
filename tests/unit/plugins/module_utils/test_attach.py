# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The attach service (_attach): which action each situation takes, and what it runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from fake_executor import FakeExecutor

from ansible_collections.cnikit.cni.plugins.module_utils import _attach, _cache, _engine, _facts
from ansible_collections.cnikit.cni.plugins.module_utils._cache import left_by_unfinished_add
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError, DeleteError, OperationError
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import AttachmentKey

RESULT = {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "mac": "0a:00:00:00:00:01", "sandbox": "/x"}],
          "ips": [{"address": "10.0.0.2/24", "interface": 0}]}


def network(version="1.0.0", **first_plugin):
    return parse_network_list({"cniVersion": version, "name": "net1",
                               "plugins": [{"type": "main", **first_plugin}, {"type": "meta"}]})


@pytest.fixture
def setup(tmp_path, fake):
    plugins = fake
    plugins.install("main", ADD={"result": RESULT})
    plugins.install("meta")
    netns = tmp_path / "netns"
    netns.write_text("")
    engine = Engine([plugins.directory], str(tmp_path / "cache"), timeout=10)
    return plugins, engine, str(netns)


def desired(net, netns, state="present", run_check=True, **attachment):
    return _attach.Desired(lambda: net, Attachment(net.name, "c1", netns, "eth0", **attachment), state, run_check)


def verbs(plugins):
    return [(c["verb"], c["plugin"]) for c in plugins.calls() if c["verb"] != "VERSION"]


def test_present_adds_then_checks_and_reports_unchanged(setup):
    plugins, engine, netns = setup
    net = network()
    outcome = _attach.converge(engine, desired(net, netns))
    assert (outcome.action, outcome.changed) == ("added", True)
    assert outcome.result["ips"] == RESULT["ips"]
    plugins.clear()
    again = _attach.converge(engine, desired(net, netns))
    assert (again.action, again.changed) == ("unchanged", False)
    assert again.result == outcome.result
    assert verbs(plugins) == [("CHECK", "main"), ("CHECK", "meta")]


def test_unchanged_without_check_runs_no_plugin(setup):
    plugins, engine, netns = setup
    net = network()
    _attach.converge(engine, desired(net, netns))
    plugins.clear()
    assert _attach.converge(engine, desired(net, netns, run_check=False)).action == "unchanged"
    assert verbs(plugins) == []


def test_failing_check_repairs_with_del_then_add(setup):
    plugins, engine, netns = setup
    net = network()
    _attach.converge(engine, desired(net, netns))
    plugins.configure("meta", CHECK={"error": {"code": 999, "msg": "interface gone"}})
    plugins.clear()
    outcome = _attach.converge(engine, desired(net, netns))
    assert outcome.action == "repaired"
    assert "interface gone" in outcome.warnings[0]
    assert verbs(plugins) == [("CHECK", "main"), ("CHECK", "meta"), ("DEL", "meta"), ("DEL", "main"),
                              ("ADD", "main"), ("ADD", "meta")]


def test_changed_config_replaces_using_the_cached_config(setup):
    plugins, engine, netns = setup
    _attach.converge(engine, desired(network(bridge="old"), netns))
    plugins.clear()
    outcome = _attach.converge(engine, desired(network(bridge="new"), netns))
    assert outcome.action == "replaced"
    calls = [c for c in plugins.calls() if c["plugin"] == "main"]
    assert [(c["verb"], c["stdin"]["bridge"]) for c in calls] == [("DEL", "old"), ("ADD", "new")]


def test_changed_arguments_replace_and_del_gets_the_cached_arguments(setup):
    plugins, engine, netns = setup
    net = network(capabilities={"portMappings": True})
    _attach.converge(engine, desired(net, netns, capability_args={"portMappings": [{"hostPort": 1}]}))
    plugins.clear()
    outcome = _attach.converge(engine, desired(net, netns, capability_args={"portMappings": [{"hostPort": 2}]}))
    assert outcome.action == "replaced"
    calls = [c for c in plugins.calls() if c["plugin"] == "main"]
    assert [(c["verb"], c["stdin"]["runtimeConfig"]["portMappings"][0]["hostPort"]) for c in calls] == [
        ("DEL", 1), ("ADD", 2)]


def test_below_040_is_unchanged_without_check_while_the_netns_exists(setup, tmp_path):
    plugins, engine, netns = setup
    net = network("0.3.1")
    _attach.converge(engine, desired(net, netns))
    plugins.clear()
    assert _attach.converge(engine, desired(net, netns)).action == "unchanged"
    assert verbs(plugins) == []
    Path(netns).unlink()
    outcome = _attach.converge(engine, desired(net, netns))
    assert outcome.action == "repaired"
    assert "is gone" in outcome.warnings[0]


def test_below_040_an_attachment_in_a_namespace_created_anew_is_repaired(setup):
    """cni_attach with create_netns recreates a vanished namespace before converging: it exists
    again, empty, and with no CHECK below 0.4.0 the attachment must not pass for unchanged."""
    plugins, engine, netns = setup
    net = network("0.3.1")
    _attach.converge(engine, desired(net, netns))
    plugins.clear()
    recreated = desired(net, netns)
    recreated.netns_created = True
    outcome = _attach.converge(engine, recreated)
    assert outcome.action == "repaired"
    assert "created anew" in outcome.warnings[0]
    assert verbs(plugins) == [("DEL", "meta"), ("DEL", "main"), ("ADD", "main"), ("ADD", "meta")]


@pytest.mark.parametrize("content", [b"", b'{"kind": "cniCacheV1", "containerId"', b"[]"])
def test_an_unusable_cache_entry_is_never_taken_for_ours(setup, content):
    # Another runtime's entry cut short by a crash: the container behind it may be running.
    plugins, engine, netns = setup
    net = network()
    path = engine.cache.path(AttachmentKey("net1", "c1", "eth0"))
    Path(path).parent.mkdir(parents=True)
    Path(path).write_bytes(content)
    for check_mode in (True, False):
        with pytest.raises(_attach.UnusableEntryError) as caught:
            _attach.converge(engine, desired(net, netns), check_mode=check_mode)
        assert "network net1, container ID c1, ifname eth0" in str(caught.value) and path in str(caught.value)
    assert verbs(plugins) == [] and Path(path).read_bytes() == content
    assert _attach.converge(engine, desired(net, netns, state="absent")).action == "deleted"  # named: DEL
    assert verbs(plugins) == [("DEL", "meta"), ("DEL", "main")]
    assert not Path(path).exists()


def test_a_legacy_cache_entry_of_another_runtime_is_left_alone(setup):
    plugins, engine, netns = setup
    path = engine.cache.path(AttachmentKey("net1", "c1", "eth0"))
    Path(path).parent.mkdir(parents=True)
    Path(path).write_text(json.dumps(RESULT))  # libcni before 2019: the bare result
    with pytest.raises(_attach.UnusableEntryError, match="network net1, container ID c1, ifname eth0"):
        _attach.converge(engine, desired(network(), netns))
    assert verbs(plugins) == []


def test_interrupted_add_is_repaired_and_counts_as_attached(setup):
    plugins, engine, netns = setup
    net = network()
    engine.cache.mark_pending(AttachmentKey("net1", "c1", "eth0"))
    assert _attach.converge(engine, desired(net, netns, state="absent"), check_mode=True).action == "deleted"
    outcome = _attach.converge(engine, desired(net, netns))
    assert outcome.action == "repaired"
    assert not engine.cache.is_pending(AttachmentKey("net1", "c1", "eth0"))


def test_an_unfinished_add_whose_clean_up_fails_is_explained_as_cni_info_explains_it(setup):
    # The failed rollback's error, this clean-up's and cni_info's message each worded it their own way.
    plugins, engine, netns = setup
    key = AttachmentKey("net1", "c1", "eth0")
    engine.cache.mark_pending(key)
    plugins.configure("main", DEL={"error": {"code": 11, "msg": "cannot tear down"}})

    with pytest.raises(DeleteError) as info:
        _attach.converge(engine, desired(network(), netns))

    left = left_by_unfinished_add(engine.cache.pending_marker(key))
    assert str(info.value).startswith("cannot clean up after an earlier ADD of network net1 that did not finish "
                                      "(its run was stopped, or its rollback failed); its DEL failed: ")
    assert str(info.value).endswith(f"; {left}")
    assert _facts.attachment_facts(engine.cache)[1] == [
        f"an ADD did not finish and was not rolled back (its run was stopped, or its rollback failed): {left}"]


def test_absent_deletes_with_cached_config_even_when_the_network_is_gone(setup):
    plugins, engine, netns = setup
    _attach.converge(engine, desired(network(bridge="at-add"), netns))
    plugins.clear()

    def missing():
        raise ConfigError("network", "no network with this name", "net1")

    gone = _attach.Desired(missing, Attachment("net1", "c1", netns), "absent")
    assert _attach.converge(engine, gone).action == "deleted"
    assert [c["stdin"].get("bridge") for c in plugins.calls("DEL") if c["plugin"] == "main"] == ["at-add"]
    assert _attach.converge(engine, gone).action == "absent"


def test_check_mode_predicts_without_add_or_del(setup):
    plugins, engine, netns = setup
    net = network()
    assert _attach.converge(engine, desired(net, netns), check_mode=True).action == "added"
    assert verbs(plugins) == []
    _attach.converge(engine, desired(net, netns))
    plugins.configure("main", CHECK={"error": {"code": 999, "msg": "broken"}})
    plugins.clear()
    assert _attach.converge(engine, desired(net, netns), check_mode=True).action == "repaired"
    assert _attach.converge(engine, desired(network(bridge="x"), netns), check_mode=True).action == "replaced"
    assert _attach.converge(engine, desired(net, netns, state="absent"), check_mode=True).action == "deleted"
    assert {verb for verb, _plugin in verbs(plugins)} == {"CHECK"}


def test_converge_all_reports_each_item_and_one_failure_does_not_stop_the_others(setup, tmp_path):
    plugins, engine, netns = setup
    net = network()
    items = [_attach.Desired(lambda: net, Attachment(net.name, f"c{i}", netns, "eth0"), "present") for i in range(6)]
    plugins.configure("meta", ADD={"error": {"code": 7, "msg": "refused"}})
    outcomes = _attach.converge_all(engine, items[:1], parallel=3)
    assert isinstance(outcomes[0], OperationError)
    plugins.configure("meta")
    outcomes = _attach.converge_all(engine, items, parallel=3)
    assert [o.action for o in outcomes] == ["added"] * 6
    described = [_attach.item_result(d, o) for d, o in zip(items, outcomes)]
    assert [d["container_id"] for d in described] == [f"c{i}" for i in range(6)]
    assert all(d["ips"] == ["10.0.0.2/24"] for d in described)
    cached, problems = engine.cache.entries("net1")
    assert len(cached) == 6 and problems == []


def test_a_batch_leaves_its_lock_files_to_the_next_verb_and_tidies_once_at_the_end(setup, tmp_path, monkeypatch):
    plugins, engine, netns = setup
    net = network()
    tidied = []
    monkeypatch.setattr(_cache.ResultCache, "tidy", lambda cache: tidied.append(os.listdir(cache.directory)))
    items = [_attach.Desired(lambda: net, Attachment(net.name, f"c{i}", netns, "eth0"), "present") for i in range(3)]
    _attach.converge_all(engine, items, parallel=2)
    assert len(tidied) == 1 and {_cache.LOCKS_SUBDIR, _cache.PENDING_SUBDIR} <= set(tidied[0])
    monkeypatch.undo()
    gone = [_attach.Desired(d.load_network, d.attachment, "absent") for d in items]
    _attach.converge_all(engine, gone, parallel=2)
    assert os.listdir(tmp_path / "cache") == [_cache.RESULTS_SUBDIR]  # no lock or marker directory left


def test_converge_all_collects_errors_per_item(setup):
    plugins, engine, netns = setup
    net = network()
    plugins.install("picky", ADD={"error": {"code": 7, "msg": "picky refuses"}})
    bad = parse_network_list({"cniVersion": "1.0.0", "name": "net2", "plugins": [{"type": "picky"}]})
    items = [desired(net, netns), _attach.Desired(lambda: bad, Attachment("net2", "c1", netns), "present")]
    outcomes = _attach.converge_all(engine, items, parallel=2)
    assert outcomes[0].action == "added"
    failed = _attach.item_result(items[1], outcomes[1])
    assert failed["failed"] and failed["action"] == "failed"
    assert "picky refuses" in failed["msg"] and failed["error"]["plugin"] == "picky"
    assert failed["error"]["verb"] == "ADD" and failed["error"]["code"] == 7


def test_converge_all_rejects_the_same_attachment_twice(setup):
    _plugins, engine, netns = setup
    net = network()
    with pytest.raises(ConfigError, match=r"attachments\[1\]: repeats attachments\[0\]"):
        _attach.converge_all(engine, [desired(net, netns), desired(net, netns)])


def test_cache_entry_written_by_add_is_libcni_shaped(setup):
    _plugins, engine, netns = setup
    net = network()
    _attach.converge(engine, desired(net, netns, cni_args=[["K", "V"]]))
    raw = json.loads(Path(engine.cache.path(AttachmentKey("net1", "c1", "eth0"))).read_bytes())
    assert list(raw) == ["kind", "containerId", "config", "ifName", "networkName", "netns", "cniArgs", "result",
                         "cnikit"]
    assert raw["cnikit"] == {"managed": True}  # ours; libcni's readers ignore the member
    assert raw["cniArgs"] == [["K", "V"]]


# -- doing no harm: another runtime's entries, kept addresses, defects reported once --------------

def foreign_entry(engine, net, netns, **changes):
    """The declared attachment as libcni 1.1 (podman 4) caches it: no netns, no cnikit member."""
    entry = _cache.CacheEntry("net1", "c1", "eth0", config=net.raw_bytes,
                              result=dict(RESULT, interfaces=[dict(RESULT["interfaces"][0], sandbox=netns)]))
    for key, value in changes.items():
        setattr(entry, key, value)
    engine.cache.write(entry)


def test_another_runtimes_matching_attachment_is_checked_and_left_alone(setup):
    plugins, engine, netns = setup
    net = network()
    foreign_entry(engine, net, netns)
    outcome = _attach.converge(engine, desired(net, netns))
    assert outcome.action == "unchanged"
    assert verbs(plugins) == [("CHECK", "main"), ("CHECK", "meta")]


@pytest.mark.parametrize("change, message", [
    ("check", "and is not healthy"),
    ("args", "with another configuration, namespace or arguments"),
])
def test_another_runtimes_attachment_is_never_repaired_or_replaced(setup, change, message):
    plugins, engine, netns = setup
    net = network()
    foreign_entry(engine, net, netns, cni_args=[["K8S_POD_NAME", "web"]] if change == "args" else [])
    plugins.configure("meta", CHECK={"error": {"code": 999, "msg": "interface gone"}})
    with pytest.raises(_attach.ForeignAttachmentError, match=f"made by another runtime {message}"):
        _attach.converge(engine, desired(net, netns))
    assert "DEL" not in [verb for verb, _plugin in verbs(plugins)]
    assert engine.cache.read(AttachmentKey("net1", "c1", "eth0")).managed is False  # untouched


def test_absent_dels_another_runtimes_attachment_in_the_namespace_of_its_sandbox(setup):
    plugins, engine, netns = setup
    net = network()
    foreign_entry(engine, net, netns)
    outcome = _attach.converge(engine, desired(net, "/var/run/netns/declared-elsewhere", state="absent"))
    assert outcome.action == "deleted"
    assert {c["env"]["CNI_NETNS"] for c in plugins.calls("DEL")} == {netns}


def test_a_repair_asks_host_local_for_the_address_it_had(setup):
    plugins, engine, netns = setup
    net = network(ipam={"type": "host-local", "subnet": "10.0.0.0/24"})
    _attach.converge(engine, desired(net, netns, cni_args=[["K", "V"]]))
    plugins.configure("meta", CHECK={"error": {"code": 999, "msg": "interface gone"}})
    plugins.clear()
    item = _attach.item_result(desired(net, netns), _attach.converge(engine, desired(net, netns, cni_args=[["K", "V"]])))
    add = plugins.calls("ADD")[0]
    assert add["env"]["CNI_ARGS"] == "K=V;IgnoreUnknown=1;IP=10.0.0.2"
    assert (item["action"], item["address_changed"]) == ("repaired", False)
    cached = engine.cache.read(AttachmentKey("net1", "c1", "eth0"))
    assert cached.cni_args == [["K", "V"]]  # the declared arguments, so the next run matches


def test_a_repair_that_cannot_keep_the_address_says_so(setup):
    plugins, engine, netns = setup
    net = network(ipam={"type": "host-local", "subnet": "10.0.0.0/24"})
    _attach.converge(engine, desired(net, netns))
    plugins.configure("meta", CHECK={"error": {"code": 999, "msg": "interface gone"}})
    new = dict(RESULT, ips=[{"address": "10.0.0.9/24", "interface": 0}])
    # As host-local does when the address was taken meanwhile: the request fails, a plain ADD not.
    plugins.configure("main", ADD=[{"if_args": "IP=", "error": {"code": 999, "msg": "10.0.0.2 is not available"}},
                                   {"result": new}])
    plugins.clear()
    item = _attach.item_result(desired(net, netns), _attach.converge(engine, desired(net, netns)))
    adds = [(c["plugin"], c["env"]["CNI_ARGS"]) for c in plugins.calls("ADD")]
    assert adds == [("main", "IgnoreUnknown=1;IP=10.0.0.2"), ("main", ""), ("meta", "")]
    assert (item["action"], item["address_changed"], item["previous_ips"]) == ("repaired", True, ["10.0.0.2/24"])


def test_a_tolerated_check_defect_is_warned_of_once_per_attachment(setup):
    plugins, engine, netns = setup
    plugins.install("portmap")
    net = parse_network_list({"cniVersion": "1.0.0", "name": "net1", "plugins": [{"type": "main"}, {"type": "portmap"}]})
    _attach.converge(engine, desired(net, netns))
    plugins.configure("portmap", CHECK={"error": {"code": 999, "msg": "could not check ipv6 dnat: no chain"}})
    # A --check run first (which cannot record what it reported) leaves the report to the real run.
    assert _attach.converge(engine, desired(net, netns), check_mode=True).warnings == []
    first = _attach.converge(engine, desired(net, netns))
    second = _attach.converge(engine, desired(net, netns))
    assert first.action == second.action == "unchanged"
    assert len(first.warnings) == 1 and "plugins#819" in first.warnings[0]
    assert second.warnings == []
    _attach.converge(engine, desired(net, netns, state="absent"))
    _attach.converge(engine, desired(net, netns))  # a new attachment: warned of again
    assert len(_attach.converge(engine, desired(net, netns)).warnings) == 1


def test_a_replace_whose_add_fails_puts_the_cached_configuration_back(setup):
    plugins, engine, netns = setup
    _attach.converge(engine, desired(network(bridge="old"), netns))
    plugins.configure("main", ADD=[{"if_stdin": '"bridge": "new"', "error": {"code": 11, "msg": "no such thing"}},
                                   {"result": RESULT}])
    plugins.clear()
    with pytest.raises(_attach.ReplaceError) as caught:
        _attach.converge(engine, desired(network(bridge="new"), netns))
    assert "no such thing" in str(caught.value) and "put back as it was" in str(caught.value)
    assert caught.value.cleanup_errors == []
    main_calls = [(c["verb"], c["stdin"]["bridge"]) for c in plugins.calls() if c["plugin"] == "main"]
    assert main_calls == [("DEL", "old"), ("ADD", "new"), ("DEL", "new"), ("ADD", "old")]
    # What is cached is the attachment as it was, so the next run sees the same replace to make.
    assert json.loads(engine.cache.read(Attachment("net1", "c1", netns).key).config)["plugins"][0]["bridge"] == "old"


def test_a_replace_that_cannot_put_the_attachment_back_reports_both_failures(setup):
    plugins, engine, netns = setup
    _attach.converge(engine, desired(network(bridge="old"), netns))
    plugins.configure("main", ADD={"error": {"code": 11, "msg": "no such thing"}})
    with pytest.raises(_attach.ReplaceError) as caught:
        _attach.converge(engine, desired(network(bridge="new"), netns))
    assert "it is detached" in str(caught.value) and "putting it back also failed" in str(caught.value)
    assert len(caught.value.to_dict()["put_back_errors"]) == 1
    assert engine.cache.read(Attachment("net1", "c1", netns).key) is None


def test_arguments_are_compared_as_a_mapping_whatever_order_the_runtime_cached(setup):
    # containerd caches CNI_ARGS in map order, which Go randomises.
    plugins, engine, netns = setup
    net = network()
    foreign_entry(engine, net, netns, cni_args=[["K8S_POD_NAME", "web"], ["IgnoreUnknown", "1"]])
    declared = desired(net, netns, cni_args=[["IgnoreUnknown", "1"], ["K8S_POD_NAME", "web"]])
    assert _attach.converge(engine, declared).action == "unchanged"
    other = desired(net, netns, cni_args=[["IgnoreUnknown", "1"], ["K8S_POD_NAME", "db"]])
    with pytest.raises(_attach.ForeignAttachmentError, match="arguments"):
        _attach.converge(engine, other)


class SlowAdds(FakeExecutor):
    """ADD takes a while and is timed, as a plugin that sets up the host's side would be."""

    def __init__(self):
        super().__init__(add_result=json.dumps(RESULT).encode())
        self.adds = []  # (network, container ID, started, ended)

    def call(self, plugin_type, verb, stdin, container_id="", netns="", ifname="", cni_args=""):
        started = time.monotonic()
        if verb == "ADD":
            time.sleep(0.05)
        answer = super().call(plugin_type, verb, stdin, container_id, netns, ifname, cni_args)
        if verb == "ADD" and plugin_type == "main":
            self.adds.append((json.loads(stdin)["name"], container_id, started, time.monotonic()))
        return answer


def test_the_first_attachment_of_each_network_is_added_before_the_others_of_that_network(tmp_path):
    # A changed subnet with forceAddress: the bridge plugin moves the bridge to the new gateway
    # in the first ADD; ADDs of the same network racing it fail to remove the old address.
    executor = SlowAdds()
    engine = Engine([], str(tmp_path / "cache"), executor=executor)
    netns = tmp_path / "netns"
    netns.write_text("")
    networks = {name: parse_network_list({"cniVersion": "1.0.0", "name": name, "plugins": [{"type": "main"}]})
                for name in ("net-a", "net-b")}
    items = [_attach.Desired(lambda n=networks[name]: n, Attachment(name, cid, str(netns), "eth0"))
             for name, cid in [("net-a", "a1"), ("net-a", "a2"), ("net-b", "b1"), ("net-a", "a3"), ("net-b", "b2")]]

    outcomes = _attach.converge_all(engine, items, parallel=4)

    assert [o.action for o in outcomes] == ["added"] * 5
    for name, first in (("net-a", "a1"), ("net-b", "b1")):
        adds = {cid: (started, ended) for network, cid, started, ended in executor.adds if network == name}
        others_started = min(started for cid, (started, _ended) in adds.items() if cid != first)
        assert adds[first][1] <= others_started, f"{name}: another ADD started before {first}'s ended"


def test_a_withheld_check_is_one_notice_for_the_task_however_many_attachments_it_holds_for(setup, monkeypatch):
    """Issue 28: CHECK through 1.1.1's dhcp daemon is withheld; the task says so once, naming the
    attachments it holds for, and an attachment the verification finds missing is repaired."""
    plugins, engine, netns = setup
    plugins.install("dhcp", VERSION={"supportedVersions": ["0.4.0", "1.0.0"]})
    net = parse_network_list({"cniVersion": "1.0.0", "name": "net1", "plugins": [
        {"type": "main", "ipam": {"type": "dhcp"}}]})
    items = [_attach.Desired(lambda: net, Attachment("net1", f"c{n}", netns, "eth0")) for n in range(5)]
    _attach.converge_all(engine, items)
    monkeypatch.setattr(_engine, "verify_in_place", lambda attachment, result: None)
    plugins.clear()

    outcomes = _attach.converge_all(engine, items)

    assert [o.action for o in outcomes] == ["unchanged"] * 5 and all(o.warnings == [] for o in outcomes)
    assert list(plugins.calls("CHECK")) == []
    notices = _attach.notices_of(items, outcomes)
    assert len(notices) == 1 and "CHECK is not sent to main with dhcp" in notices[0]
    assert notices[0].endswith(f"({'; '.join(_attach.about(item) for item in items[:3])} and 2 more)")

    def gone(attachment, _result):
        raise _engine.NotInPlaceError(f"interface {attachment.ifname} is missing")
    monkeypatch.setattr(_engine, "verify_in_place", gone)
    repaired = _attach.converge(engine, items[0])
    assert repaired.action == "repaired" and repaired.notices == []
