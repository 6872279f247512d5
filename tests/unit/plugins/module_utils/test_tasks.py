# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The modules' tasks run as services, without Ansible: the parameters their argument specs
declare, a stand-in for the module (tests/utils/stand_in_host.py), the result they fill."""

from __future__ import annotations

import json
import os

import pytest
from stand_in_host import StandInHost, TaskFailed

from ansible_collections.cnikit.cni.plugins.module_utils import _attach_task, _gc_task, _network_task, _plugin_install_task
from ansible_collections.cnikit.cni.plugins.module_utils._cache import ResultCache
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._validation import schema


def params(spec, **given) -> dict:
    """What AnsibleModule would hand the service: every option of ``spec``, its default unless given."""
    options = spec.all_options()
    unknown = set(given) - set(options)
    assert not unknown, f"not options of the spec: {unknown}"
    return {name: given.get(name, option.get("default")) for name, option in options.items()}


def test_gc_plans_in_check_mode_and_collects_in_a_real_run(host, tmp_path):
    host.plugin()
    host.conflist("net1")
    entry = host.cache_entry("net1", "c1", str(tmp_path / "cnit-gone"))
    given = params(_gc_task.ARGUMENT_SPEC, conf_dir=str(host.conf), cache_dir=str(host.cache), cni_path=[str(host.bin)])

    planned = {}
    _gc_task.run(StandInHost(str(tmp_path), check_mode=True), given, planned)
    assert planned["changed"] and [c["container_id"] for c in planned["collected"]] == ["c1"]
    assert entry.exists() and host.calls("DEL") == []

    collected = {}
    _gc_task.run(StandInHost(str(tmp_path)), given, collected)
    assert collected["collected"] == planned["collected"] and collected["errors"] == []
    assert not entry.exists() and [c["env"]["CNI_CONTAINERID"] for c in host.calls("DEL")] == ["c1"]


@pytest.mark.parametrize("version, sent", [("1.1.0", True), ("1.0.0", False)])
def test_gc_warns_of_an_unusable_entry_saying_whether_gc_was_sent(host, tmp_path, version, sent):
    host.plugin()
    host.conflist("net1", version=version)
    host.cache.joinpath("results", "net1-ctr9-eth0").write_text('{"kind":"cniCacheV1"')  # a runtime crashed mid-write
    given = params(_gc_task.ARGUMENT_SPEC, conf_dir=str(host.conf), cache_dir=str(host.cache), cni_path=[str(host.bin)])
    stand_in = StandInHost(str(tmp_path))

    _gc_task.run(stand_in, given, {})

    (warning,) = stand_in.warnings
    assert warning.startswith(f"network net1: cannot read the cache entry {host.cache / 'results' / 'net1-ctr9-eth0'}")
    assert ("sent to the plugins' GC as valid" in warning) == sent == bool(host.calls("GC"))
    if not sent:
        assert "no GC is sent to its plugins: cniVersion 1.0.0 has no GC (1.1.0 brought it)" in warning


@pytest.mark.parametrize("check_mode", [True, False])
def test_gc_reports_unusable_entries_of_networks_the_conf_dir_lacks(host, tmp_path, check_mode):
    host.plugin()
    host.conflist("net1")
    host.cache_entry("retired", "c1", host.netns("live"))  # conf_dir no longer declares it: orphaned
    retired = host.cache.joinpath("results", "retired-ctr9-eth0")
    retired.write_text('{"kind":"cniCacheV1"')  # a runtime crashed mid-write
    unknown = host.cache.joinpath("results", "gone-ctr7-eth0")
    unknown.write_text("")  # the only entry of a network nothing declares
    given = params(_gc_task.ARGUMENT_SPEC, conf_dir=str(host.conf), cache_dir=str(host.cache), cni_path=[str(host.bin)])
    stand_in = StandInHost(str(tmp_path), check_mode=check_mode)
    result = {}

    _gc_task.run(stand_in, given, result)

    assert result["orphaned_networks"] == ["retired"] and result["collected"] == [], result
    assert [(u["network"], u["file"]) for u in result["unusable_entries"]] == [("retired", str(retired)),
                                                                               (None, str(unknown))]
    assert result["unusable_entries"][0]["keys"] == [{"container_id": "ctr9", "ifname": "eth0"}]
    assert retired.exists() and unknown.exists()
    first, second = stand_in.warnings
    assert first.startswith(f"network retired: cannot read the cache entry {retired}") and "no GC is sent" in first
    assert second.startswith(f"cannot read the cache entry {unknown} (the file is empty)") and "left alone" in second


def test_gc_reads_the_whole_cache_directory_once(host, tmp_path, monkeypatch):
    # The networks conf_dir no longer declares and the unreadable files of none were two reads.
    host.plugin()
    host.conflist("net1")
    host.cache_entry("retired", "c1", host.netns("live"))
    host.cache.joinpath("results", "gone-ctr7-eth0").write_text("")
    whole_reads = []
    read = ResultCache.entries

    def counted(cache, network_name=None):
        whole_reads.extend([network_name] if network_name is None else [])
        return read(cache, network_name)
    monkeypatch.setattr(ResultCache, "entries", counted)
    given = params(_gc_task.ARGUMENT_SPEC, conf_dir=str(host.conf), cache_dir=str(host.cache), cni_path=[str(host.bin)])
    result = {}

    _gc_task.run(StandInHost(str(tmp_path)), given, result)

    assert result["orphaned_networks"] == ["retired"] and [u["network"] for u in result["unusable_entries"]] == [None]
    assert len(whole_reads) == 1


@pytest.mark.parametrize("check_mode", [True, False])
def test_gc_reports_unusable_entries_of_a_network_with_disable_gc_as_its_own(host, tmp_path, check_mode):
    # They were reported as of no declared network, which was untrue.
    host.plugin()
    host.conflist("net1", disableGC=True)
    empty = host.cache.joinpath("results", "net1-ctr9-eth0")
    empty.write_text("")  # a runtime crashed writing it
    given = params(_gc_task.ARGUMENT_SPEC, conf_dir=str(host.conf), cache_dir=str(host.cache), cni_path=[str(host.bin)])
    stand_in = StandInHost(str(tmp_path), check_mode=check_mode)
    result = {}

    _gc_task.run(stand_in, given, result)

    assert result["skipped_networks"] == ["net1"] and result["collected"] == [], result
    assert result["unusable_entries"] == [{"network": "net1", "file": str(empty), "reason": "the file is empty",
                                           "keys": [{"container_id": "ctr9", "ifname": "eth0"}]}]
    assert stand_in.warnings == [f"network net1: cannot read the cache entry {empty} (the file is empty); "
                                 "it is left alone: the network sets disableGC"]
    assert empty.exists() and host.calls("GC") == []


@pytest.mark.parametrize("check_mode", [True, False])
def test_removing_a_network_file_live_attachments_use_warns_naming_them(host, tmp_path, check_mode):
    host.conflist("net1")
    host.cache_entry("net1", "c-live", host.netns("live"))
    host.cache_entry("net1", "podman1", host.netns("theirs"), managed=False)
    os.unlink(host.netns("gone"))
    host.cache_entry("net1", "c-gone", str(tmp_path / "gone"))
    host.cache_entry("net2", "c-other", host.netns("other"))
    given = params(_network_task.ARGUMENT_SPEC, name="net1", state="absent", conf_dir=str(host.conf),
                   cache_dir=str(host.cache))
    given["unsafe_writes"] = False
    stand_in, result = StandInHost(str(tmp_path), check_mode=check_mode), {}

    _network_task.run(stand_in, given, result)

    (warning,) = stand_in.warnings
    assert result["changed"] and warning.startswith("network net1: 2 attachments made with it are still attached")
    assert "container ID c-live" in warning and "container ID podman1" in warning and "c-gone" not in warning
    assert "cni_attach state=absent" in warning


def test_removing_a_network_file_many_attachments_use_names_the_first_few_as_every_message_lists(host, tmp_path):
    # It named five, then "; and N more", where the other messages name three, then "and N more".
    host.conflist("net1")
    for number in range(5):
        host.cache_entry("net1", f"c{number}", host.netns(f"live{number}"))
    given = params(_network_task.ARGUMENT_SPEC, name="net1", state="absent", conf_dir=str(host.conf),
                   cache_dir=str(host.cache))
    given["unsafe_writes"] = False
    stand_in = StandInHost(str(tmp_path))

    _network_task.run(stand_in, given, {})

    (warning,) = stand_in.warnings
    named = [f"container ID c{number}, eth0 in {host.netns(f'live{number}')}" for number in range(3)]
    assert f"are still attached ({'; '.join(named)} and 2 more): " in warning


def test_removing_a_network_file_nothing_uses_warns_of_nothing(host, tmp_path):
    host.conflist("net1")
    given = params(_network_task.ARGUMENT_SPEC, name="net1", state="absent", conf_dir=str(host.conf),
                   cache_dir=str(host.cache))
    stand_in = StandInHost(str(tmp_path))
    _network_task.run(stand_in, given, {})
    assert stand_in.warnings == [] and not list(host.conf.iterdir())


def test_network_check_mode_predicts_the_file_and_writes_nothing(tmp_path):
    conf_dir = tmp_path / "net.d"
    given = params(_network_task.ARGUMENT_SPEC, name="cnit-web", plugins=[{"type": "loopback"}],
                   conf_dir=str(conf_dir), check_plugins=False)
    given["unsafe_writes"] = False  # one of Ansible's common file options (add_file_common_args)
    result = {}

    _network_task.run(StandInHost(str(tmp_path), check_mode=True, diff=True), given, result)

    assert result["changed"] and result["path"] == str(conf_dir / "10-cnit-web.conflist")
    assert json.loads(result["diff"]["after"]) == result["config"] and result["diff"]["before"] == ""
    assert result["ansible_facts"]  # the conflist a later cni_attach in check mode predicts against
    assert not conf_dir.exists()


def test_network_check_mode_on_a_host_without_jsonschema_predicts_unvalidated_and_a_real_run_fails(tmp_path):
    """Check mode on a fresh host, before the plugins role has installed the libraries (issue 28):
    a prediction with a warning, not a failure; the real run still needs jsonschema."""
    given = params(_network_task.ARGUMENT_SPEC, name="cnit-web", plugins=[{"type": "bridge", "vlan": 5000}],
                   conf_dir=str(tmp_path / "net.d"))
    given["unsafe_writes"] = False
    host, result = StandInHost(str(tmp_path), check_mode=True, missing=("jsonschema",)), {}

    _network_task.run(host, given, result)

    assert result["changed"] and result["validation_errors"] == []
    assert [w for w in host.warnings if "jsonschema is not installed" in w and "without validating" in w]
    with pytest.raises(TaskFailed, match="jsonschema"):
        _network_task.run(StandInHost(str(tmp_path), missing=("jsonschema",)), given, {})
    assert not (tmp_path / "net.d").exists()


def test_network_refuses_a_change_every_add_would_refuse_and_leaves_the_file(tmp_path):
    """A subnet change the bridge plugin will refuse on this host (issue 28: the file was rewritten,
    then cni_attach refused the change). The host's loopback stands in for a gateway bridge that
    holds 127.0.0.1/8, the old subnet's gateway."""
    def bridge(subnet, **options):
        return [{"type": "bridge", "bridge": "lo", "isGateway": True,
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet}]]}, **options}]

    def given(plugins):
        options = params(_network_task.ARGUMENT_SPEC, name="cnit-web", plugins=plugins, conf_dir=str(tmp_path),
                         check_plugins=False)
        options["unsafe_writes"] = False
        return options

    _network_task.run(StandInHost(str(tmp_path)), given(bridge("127.0.0.0/8")), {})
    written = (tmp_path / "10-cnit-web.conflist").read_bytes()
    _network_task.run(StandInHost(str(tmp_path)), given(bridge("127.0.0.0/8")), {})  # converged: nothing to refuse

    for check_mode in (True, False):
        with pytest.raises(TaskFailed) as failed:
            _network_task.run(StandInHost(str(tmp_path), check_mode=check_mode), given(bridge("10.9.8.0/24")), {})
        assert "plugins[0]: (bridge) bridge lo on this host holds 127.0.0.1/8" in failed.value.msg
        assert "every ADD of the changed network would fail" in failed.value.msg
        assert (tmp_path / "10-cnit-web.conflist").read_bytes() == written
    result = {}
    _network_task.run(StandInHost(str(tmp_path)), given(bridge("10.9.8.0/24", forceAddress=True)), result)
    assert result["changed"]


def test_network_warns_of_its_configuration_when_it_writes_it_not_on_every_converged_run(tmp_path):
    flat = {"type": "bridge", "bridge": "cnit-br0", "ipam": {"type": "host-local", "subnet": "10.9.0.0/24"}}
    given = params(_network_task.ARGUMENT_SPEC, name="cnit-web", plugins=[flat], conf_dir=str(tmp_path), check_plugins=False)
    given["unsafe_writes"] = False
    runs = []
    for check_mode in (True, False, True, False):
        host, result = StandInHost(str(tmp_path), check_mode=check_mode), {}
        _network_task.run(host, given, result)
        runs.append((result["changed"], [w["path"] for w in result["validation_warnings"]], host.warnings))

    (planned, _paths, planned_warnings), written, (_c, _p, predicted_again), (converged, paths, converged_warnings) = runs
    assert planned and written[0]
    assert [w for w in planned_warnings if "plugins[0].ipam.subnet" in w] and written[2] == planned_warnings
    # The file holds the flat subnet since the run that wrote it: listed, not warned of again.
    assert not converged and paths == ["plugins[0].ipam.subnet"]
    assert converged_warnings == [] and predicted_again == []


def test_a_converged_network_run_reads_its_file_once_and_recalls_its_verdict(tmp_path, monkeypatch):
    """Issue 33: a converged cni_network task must cost little. It validates nothing again: the
    verdict of the run that wrote the file holds (_verdicts), with the same warnings, told from the
    host's by their mark (of_host); the file read to compare is the one the write step compares."""
    reads, schema_runs = [], []
    read_conf_file, schema_findings = _network_task.read_conf_file, schema.schema_findings
    monkeypatch.setattr(_network_task, "read_conf_file", lambda path: reads.append(path) or read_conf_file(path))
    monkeypatch.setattr(schema, "schema_findings", lambda *a: schema_runs.append(a[0]) or schema_findings(*a))
    flat = {"type": "bridge", "bridge": "cnit-br0", "ipam": {"type": "host-local", "subnet": "10.9.0.0/24"}}
    given = params(_network_task.ARGUMENT_SPEC, name="cnit-web", plugins=[flat], conf_dir=str(tmp_path), check_plugins=False)
    given["unsafe_writes"] = False
    _network_task.run(StandInHost(str(tmp_path)), given, {})
    written_runs = len(schema_runs)
    reads.clear(), schema_runs.clear()
    host, result = StandInHost(str(tmp_path)), {}

    _network_task.run(host, given, result)

    assert not result["changed"] and len(reads) == 1 and schema_runs == [] and written_runs == 2
    assert [w["path"] for w in result["validation_warnings"]] == ["plugins[0].ipam.subnet"] and host.warnings == []


def test_network_warns_of_what_the_host_says_on_every_run(tmp_path):
    given = params(_network_task.ARGUMENT_SPEC, name="cnit-web", plugins=[{"type": "loopback"}], conf_dir=str(tmp_path),
                   check_plugins=False)
    given["unsafe_writes"] = False
    (tmp_path / "99-broken.conflist").write_text("{")
    for _run in range(2):
        host = StandInHost(str(tmp_path))
        _network_task.run(host, given, {})
        assert [w for w in host.warnings if "99-broken.conflist cannot be loaded" in w]


@pytest.mark.parametrize("managed", [True, False], ids=["cnikit", "another runtime"])
def test_attachments_made_from_a_conf_are_unchanged_once_cni_network_writes_it_as_a_list(host, tmp_path, managed):
    """An operator hands 10-net1.conf to cni_network (its content as config). The conflist written
    is the list runtimes cached for the .conf (libcni's ConfListFromConf keeps name and cniVersion
    in the plugin), so the attachments made from the .conf are left as they are: cnikit's not
    replaced (DEL, ADD), another runtime's not refused as made with another configuration."""
    host.plugin()
    single = {"cniVersion": "1.0.0", "name": "net1", "type": "noop", "debugFile": str(host.bin / "noop.debug.json")}
    (host.conf / "10-net1.conf").write_text(json.dumps(single))
    netns = "/proc/self/ns/net"  # the test double creates nothing in it
    attach = params(_attach_task.ARGUMENT_SPEC, network="net1", netns=netns, container_id="c1", ifname="cnit-t0",
                    conf_dir=str(host.conf), cache_dir=str(host.cache), cni_path=[str(host.bin)])
    if managed:
        _attach_task.run(StandInHost(str(tmp_path)), attach, {})
    else:  # as libcni caches it: ConfListFromConf's list, name and cniVersion in the plugin too
        host.cache_entry("net1", "c1", netns, "cnit-t0", {"cniVersion": "1.0.0", "name": "net1", "plugins": [single]},
                         managed=False)
    network = params(_network_task.ARGUMENT_SPEC, name="net1", config=(host.conf / "10-net1.conf").read_text(),
                     conf_dir=str(host.conf), check_plugins=False)
    network["unsafe_writes"] = False
    _network_task.run(StandInHost(str(tmp_path)), network, {})
    host.log.unlink(missing_ok=True)
    result = {}

    _attach_task.run(StandInHost(str(tmp_path)), attach, result)

    assert (host.conf / "10-net1.conflist").exists()  # read before the .conf: the network now comes from it
    assert not result["changed"] and result["action"] == "unchanged", result
    assert [c["verb"] for c in host.calls() if c["verb"] != "VERSION"] == ["CHECK"]


def test_network_strict_validation_fails_the_task_with_the_findings(tmp_path):
    given = params(_network_task.ARGUMENT_SPEC, name="cnit-web", plugins=[{"type": "bridge", "vlan": 5000}],
                   conf_dir=str(tmp_path), check_plugins=False)
    given["unsafe_writes"] = False

    with pytest.raises(TaskFailed) as failed:
        _network_task.run(StandInHost(str(tmp_path)), given, {})

    assert "plugins[0].vlan: must be at most 4094 (got 5000)" in failed.value.msg
    assert [e["path"] for e in failed.value.result["validation_errors"]] == ["plugins[0].vlan"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("config", [
    {"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "bridge", "ipam": {"type": "../../tmp/x"}}]},
    json.dumps({"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "bridge", "ipam": {"type": "../../tmp/x"}}]}),
])
def test_an_inline_config_whose_ipam_type_names_a_path_is_refused_naming_it(tmp_path, config):
    given = params(_attach_task.ARGUMENT_SPEC, config=config, netns="cnit-t-never-made")
    given["attachments"] = [dict.fromkeys(_attach_task.ITEM_OPTIONS)]

    with pytest.raises(ConfigError) as refused:
        _attach_task.build_desired(_attach_task.item_specs(given)[0][1], "attachments[0].",
                                   _attach_task.NetworkSource(str(tmp_path)), True)

    assert refused.value.path == "attachments[0].config: plugins[0].ipam.type" and refused.value.value == "../../tmp/x"
    assert "file name" in str(refused.value)


def test_the_attach_diff_names_what_is_replaced_or_repaired():
    def item(container_id, action, state="present"):
        return {"network": "n", "container_id": container_id, "ifname": "eth0", "action": action, "state": state,
                "changed": action not in ("unchanged", "absent")}

    diff = _attach_task.diff_of([item("a", "added"), item("b", "replaced"), item("c", "repaired"), item("d", "unchanged"),
                                 item("e", "deleted", "absent")])

    assert diff["before"].splitlines() == ["n/a/eth0: detached", "n/b/eth0: attached", "n/c/eth0: attached",
                                           "n/e/eth0: attached"]
    assert diff["after"].splitlines() == ["n/a/eth0: attached", "n/b/eth0: attached (replaced)",
                                          "n/c/eth0: attached (repaired)", "n/e/eth0: detached"]


def test_attachment_items_take_the_top_level_values_they_leave_out():
    given = params(_attach_task.ARGUMENT_SPEC, network="web", netns="cnit-a", attachments=[
        {**dict.fromkeys(_attach_task.ITEM_OPTIONS), "netns": "cnit-b"},
        {**dict.fromkeys(_attach_task.ITEM_OPTIONS), "ifname": "net1", "state": "absent"},
    ])

    specs = _attach_task.item_specs(given)

    assert [prefix for prefix, _spec in specs] == ["attachments[0].", "attachments[1]."]
    assert [(s["network"], s["netns"], s["ifname"], s["state"]) for _prefix, s in specs] == [
        ("web", "cnit-b", "eth0", "present"), ("web", "cnit-a", "net1", "absent")]


def test_install_without_dest_or_cni_path_fails_before_anything(tmp_path):
    given = params(_plugin_install_task.ARGUMENT_SPEC, version="1.1.1", cni_path=[])

    with pytest.raises(TaskFailed, match="dest: no directory to install into"):
        _plugin_install_task.run(StandInHost(str(tmp_path)), given, {})


def test_the_module_gets_a_copy_of_the_spec_the_service_reads():
    kwargs = _attach_task.ARGUMENT_SPEC.module_kwargs()
    kwargs["argument_spec"]["attachments"]["options"]["ifname"]["default"] = "cnit-changed"

    assert "default" not in _attach_task.ITEM_OPTIONS["ifname"]
    assert kwargs["mutually_exclusive"] == [["network", "config"]]
    assert set(kwargs["argument_spec"]) == set(_attach_task.ARGUMENT_SPEC.options) | {
        "cni_path", "conf_dir", "cache_dir", "timeout"}


@pytest.mark.parametrize("as_text", [False, True], ids=["mapping", "text"])
def test_an_inline_single_plugin_conf_is_the_list_libcni_loads_it_as(as_text):
    """cni_attach's inline config may be a .conf as runtimes keep them (issue 28): libcni attaches
    it as a one-plugin list, caching that list's JSON (ConfListFromConf: sorted keys, compact)."""
    single = {"cniVersion": "0.4.0", "name": "mynet", "type": "loopback"}
    given = params(_attach_task.ARGUMENT_SPEC, config=json.dumps(single) if as_text else single,
                   netns="/proc/self/ns/net")
    (prefix, spec), = _attach_task.item_specs(given)

    desired = _attach_task.build_desired(spec, prefix, _attach_task.NetworkSource("/nonexistent"), True)
    network = desired.load_network()

    assert desired.network_name == "mynet" and network.cni_version == "0.4.0" and network.plugins == [single]
    assert network.raw_bytes == (b'{"cniVersion":"0.4.0","name":"mynet","plugins":[{"cniVersion":"0.4.0",'
                                 b'"name":"mynet","type":"loopback"}]}')


def test_attach_refuses_an_item_whose_network_name_is_no_name_before_anything_runs(host, tmp_path):
    # Its attachment was made anyway and failed only when converged, after the other items ran.
    host.plugin()
    host.conflist("net1")
    netns = "/proc/self/ns/net"  # the test double creates nothing in it
    attach = params(_attach_task.ARGUMENT_SPEC, netns=netns, ifname="cnit-t0", conf_dir=str(host.conf),
                    cache_dir=str(host.cache), cni_path=[str(host.bin)],
                    attachments=[{**dict.fromkeys(_attach_task.ITEM_OPTIONS), "network": "net1", "container_id": "c1"},
                                 {**dict.fromkeys(_attach_task.ITEM_OPTIONS), "network": "../net1", "container_id": "c2"}])

    with pytest.raises(ConfigError) as refused:
        _attach_task.run(StandInHost(str(tmp_path)), attach, {})

    assert refused.value.path == "attachments[1].network" and refused.value.value == "../net1"
    assert host.calls() == []
