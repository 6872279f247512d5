# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The runtime engine (_engine) against the test-double plugin: versions, requests, ADD and
its rollback, DEL, CHECK, GC, STATUS and the locks between them."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest
from fake_executor import FakeExecutor

from ansible_collections.cnikit.cni.plugins.module_utils import _attach, _cache
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils import _engine
from ansible_collections.cnikit.cni.plugins.module_utils._engine import (
    VERB_INTRODUCED_IN, Attachment, CheckNotAvailable, Engine, GCReport, NotInPlaceError, build_request, network_at_add)
from ansible_collections.cnikit.cni.plugins.module_utils._errors import (
    CNIError, ConfigError, DeleteError, OperationError, PluginError)
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import AttachmentKey
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules import bridge as bridge_rules
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules import dhcp as dhcp_rules
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules import registry
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules._common import binary_releases

NETNS = "/var/run/netns/cnit-unit"


def _result(version: str, address: str = "10.250.0.5/24", **extra) -> dict:
    result = {"cniVersion": version,
              "interfaces": [{"name": "eth0", "mac": "02:00:00:00:00:05", "sandbox": NETNS}],
              "ips": [{"address": address, "gateway": "10.250.0.1", "interface": 0}],
              "routes": [{"dst": "0.0.0.0/0"}]}
    if version.startswith("0."):
        result["ips"][0]["version"] = "4"
    result.update(extra)
    return result


@pytest.fixture
def fake(fake):
    """The shared test double, installed as noop, noop2 and noop3."""
    for name in ("noop", "noop2", "noop3"):
        fake.install(name)
    return fake


@pytest.fixture
def go(tmp_path):
    """A file a waiting plugin waits for; created at teardown too, so no plugin outlives a
    failed test."""
    path = tmp_path / "go"
    yield path
    path.touch()


@pytest.fixture
def engine(tmp_path, fake):
    return Engine([str(tmp_path / "empty"), fake.directory], str(tmp_path / "cache"), timeout=10)


def _net(*types, version="1.0.0", name="net", **envelope) -> object:
    raw = {"cniVersion": version, "name": name, "plugins": [{"type": t} for t in types]}
    raw.update(envelope)
    return parse_network_list(raw)


def _attachment(container_id="c1", ifname="eth0", network="net", **kwargs) -> Attachment:
    return Attachment(network, container_id, kwargs.pop("netns", NETNS), ifname, **kwargs)


def _cache_file(engine, network="net", container_id="c1", ifname="eth0") -> Path:
    return Path(engine.cache.directory) / "results" / f"{network}-{container_id}-{ifname}"


def _sequence(fake):
    return [(c["verb"], c["plugin"]) for c in fake.calls()]


def _checks(fake):
    return [c["plugin"] for c in fake.calls("CHECK")]


# -- versions -----------------------------------------------------------------------------------

@pytest.mark.parametrize("version, available", [
    ("0.3.1", {"ADD": True, "DEL": True, "CHECK": False, "GC": False, "STATUS": False}),
    ("0.4.0", {"ADD": True, "DEL": True, "CHECK": True, "GC": False, "STATUS": False}),
    ("1.0.0", {"ADD": True, "DEL": True, "CHECK": True, "GC": False, "STATUS": False}),
    ("1.1.0", {"ADD": True, "DEL": True, "CHECK": True, "GC": True, "STATUS": True}),
])
def test_available_verbs_follow_the_version_the_list_runs_at(engine, fake, version, available):
    network = _net("noop", version=version)
    assert {verb: engine.available(network, verb) for verb in VERB_INTRODUCED_IN} == available


def test_available_verbs_follow_the_version_narrowed_by_the_binaries(engine, fake):
    fake.configure("noop", VERSION={"supportedVersions": ["0.4.0", "1.0.0"]})
    network = _net("noop", version="1.1.0", cniVersions=["1.0.0"])
    assert not engine.available(network, "STATUS")
    assert engine.available(network, "CHECK")


def test_declared_version_needs_no_probe(engine, fake):
    assert engine.version_of(_net("noop", version="0.4.0")) == "0.4.0"
    assert fake.calls() == []


def test_cni_versions_are_narrowed_by_the_probed_binaries(engine, fake):
    fake.configure("noop2", VERSION={"supportedVersions": ["0.4.0", "1.0.0"]})
    network = _net("noop", "noop2", version="1.1.0", cniVersions=["0.4.0", "1.0.0"])
    engine.add(network, _attachment())
    assert [c["stdin"]["cniVersion"] for c in fake.calls("ADD")] == ["1.0.0", "1.0.0"]
    assert len(fake.calls("VERSION")) == 2
    engine.delete(network, _attachment())
    assert len(fake.calls("VERSION")) == 2  # memoised


def test_del_with_cni_versions_asks_every_plugin_when_one_binary_is_missing(engine, fake, tmp_path):
    network = _net("noop", "noop2", version="1.0.0", cniVersions=["0.4.0", "1.0.0"])
    engine.add(network, _attachment())
    os.unlink(fake.path("noop2"))
    fake.clear()
    with pytest.raises(OperationError, match='failed to find plugin "noop2"'):
        engine.delete(network, _attachment())
    assert [(c["verb"], c["plugin"]) for c in fake.calls("DEL")] == [("DEL", "noop")]
    assert _cache_file(engine).exists()  # kept for a retry


# -- the attachment and the engine's shape -------------------------------------------------------

def test_an_attachment_is_complete_when_made_and_cannot_change():
    attachment = Attachment("net", "c1", "/run/netns/cnit-unit", "eth0", [["K", "V"], ["N", "1"]],
                            {"portMappings": [{"hostPort": 8080.0, "containerPort": 80}]})
    assert attachment.key == AttachmentKey("net", "c1", "eth0")
    assert attachment.canonical_netns == NETNS  # both spellings of a named namespace are one
    assert attachment.cni_args == (("K", "V"), ("N", "1")) and attachment.cni_args_string == "K=V;N=1"
    assert attachment.libcni_capability_args == {"portMappings": [{"hostPort": 8080, "containerPort": 80}]}
    with pytest.raises(dataclasses.FrozenInstanceError):
        attachment.netns = "/var/run/netns/other"
    requested = attachment.with_requested_ips(["10.0.0.5"])
    assert requested.cni_args_string == "K=V;N=1;IgnoreUnknown=1;IP=10.0.0.5" and requested.key == attachment.key


def test_an_attachment_names_the_option_of_a_bad_name_when_made():
    with pytest.raises(ConfigError) as refused:
        Attachment("net", "c/1", NETNS, option_prefix="attachments[2].")
    assert refused.value.path == "attachments[2].container_id"


def test_the_engine_keeps_the_verbs_and_little_else(engine):
    public = {name for name in dir(engine) if not name.startswith("_")}
    assert public == {"add", "check", "delete", "delete_as_added", "gc", "status", "available", "version_of",
                      "executor", "cache"}


# -- requests -----------------------------------------------------------------------------------

def test_request_injects_name_and_version_and_filters_runtime_config():
    network = _net("portmap", version="1.0.0", name="dbnet")
    plugin = {"type": "portmap", "name": "wrong", "cniVersion": "0.1.0", "snat": True,
              "capabilities": {"portMappings": True, "bandwidth": False, "mac": True}}
    attachment = _attachment(network="dbnet", capability_args={
        "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
        "bandwidth": {"ingressRate": 1}, "ips": ["10.250.0.9/24"]})
    request = build_request(network, plugin, "1.0.0", attachment=attachment)
    data = json.loads(request)
    assert data == {"type": "portmap", "name": "dbnet", "cniVersion": "1.0.0", "snat": True,
                    "capabilities": {"portMappings": True, "bandwidth": False, "mac": True},
                    "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}}
    assert list(data) == sorted(data)  # libcni sends sorted keys


def test_runtime_config_replaces_a_static_one_only_when_a_capability_matches():
    network = _net("p")
    plugin = {"type": "p", "capabilities": {"mac": True}, "runtimeConfig": {"static": 1}}
    with_mac = json.loads(build_request(network, plugin, "1.0.0", attachment=_attachment(capability_args={"mac": "02:00:00:00:00:01"})))
    without = json.loads(build_request(network, plugin, "1.0.0", attachment=_attachment(capability_args={"ips": []})))
    assert with_mac["runtimeConfig"] == {"mac": "02:00:00:00:00:01"}
    assert without["runtimeConfig"] == {"static": 1}


def test_prev_result_is_converted_to_the_list_version():
    legacy = {"cniVersion": "0.2.0", "ip4": {"ip": "10.250.0.5/24"}}
    data = json.loads(build_request(_net("p"), {"type": "p"}, "1.0.0", prev_result=legacy))
    assert data["prevResult"] == {"cniVersion": "1.0.0", "ips": [{"address": "10.250.0.5/24"}], "routes": []}


# -- ADD ----------------------------------------------------------------------------------------

def test_add_chains_results_and_caches_the_last_one(engine, fake):
    fake.configure("noop", ADD={"result": _result("0.4.0")})
    fake.configure("noop3", ADD={"result": _result("1.0.0", address="10.250.0.7/24")})
    network = _net("noop", "noop2", "noop3")
    attachment = _attachment(cni_args=[["IgnoreUnknown", "1"], ["K", "V"]])
    result = engine.add(network, attachment)
    assert result == _result("1.0.0", address="10.250.0.7/24")
    calls = fake.calls("ADD")
    assert [c["plugin"] for c in calls] == ["noop", "noop2", "noop3"]
    assert "prevResult" not in calls[0]["stdin"]
    expected_prev = _result("1.0.0")
    assert calls[1]["stdin"]["prevResult"] == expected_prev  # 0.4.0 result converted to 1.0.0
    assert calls[2]["stdin"]["prevResult"] == expected_prev  # noop2 passed it through
    assert calls[0]["env"] == {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_NETNS": NETNS,
                               "CNI_IFNAME": "eth0", "CNI_ARGS": "IgnoreUnknown=1;K=V",
                               "CNI_PATH": engine.executor.cni_path[0] + ":" + fake.directory}
    entry = engine.cache.read(attachment.key)
    assert entry.config == network.raw_bytes and entry.netns == NETNS
    assert entry.cni_args == [["IgnoreUnknown", "1"], ["K", "V"]]
    assert entry.result == result
    assert network_at_add(entry).plugins == network.plugins


def test_add_returns_the_result_at_the_list_version_and_caches_it_unconverted(engine, fake):
    fake.configure("noop", ADD={"result": _result("1.0.0")})
    result = engine.add(_net("noop", version="0.4.0"), _attachment())
    assert result["cniVersion"] == "0.4.0" and result["ips"][0]["version"] == "4"
    assert engine.cache.read(_attachment().key).result == _result("1.0.0")


@pytest.mark.parametrize("printed", [{}, {"cniVersion": ""}, {"cniVersion": "", "ips": []}])
def test_result_without_version_is_taken_at_the_list_version(engine, fake, printed):
    fake.configure("noop", ADD={"result": printed})
    assert engine.add(_net("noop", version="0.4.0"), _attachment())["cniVersion"] == "0.4.0"


@pytest.mark.parametrize("behaviour, message", [
    ({"stdout": ""}, "succeeded but printed no JSON result: b''"),
    ({"stdout": "garbage"}, "succeeded but printed no JSON result: b'garbage'"),
    ({"stdout": "[1]"}, "succeeded but printed no JSON result"),
    ({"result": {"cniVersion": "7.0.0"}}, "returned a result of an unknown version"),
])
def test_add_rejects_bad_success_output_and_rolls_back(engine, fake, behaviour, message):
    fake.configure("noop2", ADD=behaviour)
    with pytest.raises(OperationError, match=message) as info:
        engine.add(_net("noop", "noop2"), _attachment())
    assert info.value.cause.plugin == "noop2"
    assert _sequence(fake)[-2:] == [("DEL", "noop2"), ("DEL", "noop")]
    assert not _cache_file(engine).exists()


def test_failed_add_deletes_the_whole_list_in_reverse_and_caches_nothing(engine, fake):
    fake.configure("noop", ADD={"result": _result("1.0.0")})
    fake.configure("noop3", ADD={"error": {"code": 11, "msg": "try again", "details": "busy"}})
    network = _net("noop", "noop2", "noop3")
    with pytest.raises(OperationError) as info:
        engine.add(network, _attachment())
    assert _sequence(fake) == [("ADD", "noop"), ("ADD", "noop2"), ("ADD", "noop3"),
                               ("DEL", "noop3"), ("DEL", "noop2"), ("DEL", "noop")]
    # The rollback DEL carries what had been set up: the last successful result.
    assert all(c["stdin"]["prevResult"] == _result("1.0.0") for c in fake.calls("DEL"))
    assert all(c["env"]["CNI_CONTAINERID"] == "c1" for c in fake.calls("DEL"))
    error = info.value
    assert isinstance(error.cause, PluginError) and error.cleanup_errors == []
    assert (error.cause.plugin, error.cause.verb, error.cause.code) == ("noop3", "ADD", 11)
    assert str(error) == "ADD of network net failed and was rolled back: plugin noop3 failed (ADD) [code 11]: try again; busy"
    details = error.to_dict()
    assert (details["plugin"], details["verb"], details["code"], details["msg"]) == ("noop3", "ADD", 11, str(error))
    assert not _cache_file(engine).exists()


def test_failed_first_plugin_rolls_back_without_prev_result(engine, fake):
    fake.configure("noop", ADD={"error": {"code": 7, "msg": "bad"}})
    with pytest.raises(OperationError):
        engine.add(_net("noop", "noop2"), _attachment())
    assert _sequence(fake) == [("ADD", "noop"), ("DEL", "noop2"), ("DEL", "noop")]
    assert all("prevResult" not in c["stdin"] for c in fake.calls("DEL"))


def test_rollback_errors_are_reported_beside_the_original(engine, fake):
    fake.configure("noop2", ADD={"error": {"code": 7, "msg": "add broke"}},
                   DEL={"error": {"code": 999, "msg": "del broke"}})
    with pytest.raises(OperationError) as info:
        engine.add(_net("noop", "noop2"), _attachment())
    assert _sequence(fake)[-2:] == [("DEL", "noop2"), ("DEL", "noop")]  # rollback went on
    marker = os.path.join(engine.cache.directory, "cnikit-pending", "net-c1-eth0")
    assert str(info.value) == ("ADD of network net failed: plugin noop2 failed (ADD) [code 7]: "
                               "add broke; rollback also failed: plugin noop2 failed (DEL) [code 999]: del broke; "
                               "what the plugins made may be left on the host (an interface, an address, rules); the "
                               f"intent marker {marker} records it, and the next cni_attach of this attachment (state "
                               "present or absent) DELs it first")
    assert [e["msg"] for e in info.value.to_dict()["rollback_errors"]] == \
        ["plugin noop2 failed (DEL) [code 999]: del broke"]


def test_a_rollback_failing_with_the_error_of_the_add_says_it_once(engine, fake):
    """The dhcp IPAM without its daemon fails ADD and DEL alike: one error, said once."""
    refused = {"error": {"code": 999, "msg": "error dialing DHCP daemon: connection refused"}}
    fake.configure("noop2", ADD=refused, DEL=refused)
    with pytest.raises(OperationError) as info:
        engine.add(_net("noop2"), _attachment())
    assert str(info.value).startswith("ADD of network net failed, and its rollback (DEL) failed the same way: plugin "
                                      "noop2 failed (ADD) [code 999]: error dialing DHCP daemon: connection refused; "
                                      "what the plugins made")
    assert [e["verb"] for e in info.value.to_dict()["rollback_errors"]] == ["DEL"]


def test_missing_plugin_fails_the_add_and_the_others_are_rolled_back(engine, fake):
    with pytest.raises(OperationError, match='failed to find plugin "absent"') as info:
        engine.add(_net("noop", "absent", "noop2"), _attachment())
    assert _sequence(fake) == [("ADD", "noop"), ("DEL", "noop2"), ("DEL", "noop")]
    assert len(info.value.cleanup_errors) == 1


def test_unwritable_cache_fails_the_add_and_rolls_back(engine, fake):
    Path(engine.cache.directory).mkdir()
    Path(engine.cache.directory, "results").write_text("a file where the results dir should be")
    with pytest.raises(OperationError, match="cannot use .*/results"):
        engine.add(_net("noop"), _attachment())
    assert _sequence(fake) == [("ADD", "noop"), ("DEL", "noop")]


@pytest.mark.parametrize("verb", ["add", "delete", "check"])
def test_unusable_cache_dir_fails_before_any_plugin_runs(tmp_path, fake, verb):
    (tmp_path / "cache").write_text("a file, not a directory")
    engine = Engine([fake.directory], str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match="cache: not a directory") as info:
        getattr(engine, verb)(_net("noop"), _attachment())
    assert info.value.path == "cache_dir"
    assert fake.calls() == []


def test_result_the_list_version_cannot_hold_fails_the_add(engine, fake):
    fake.configure("noop", ADD={"result": {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0"}]}})
    with pytest.raises(OperationError, match="no valid IP addresses"):
        engine.add(_net("noop", version="0.2.0"), _attachment())
    assert _sequence(fake) == [("ADD", "noop"), ("DEL", "noop")]
    assert not _cache_file(engine).exists()


@pytest.mark.parametrize("network, given, field", [
    ("../x", {"network": "../x"}, "network"),
    ("net", {"network": "other"}, "network"),  # an attachment of another network than the list
    ("net", {"container_id": "../../etc"}, "container_id"),
    ("net", {"container_id": ""}, "container_id"),
    ("net", {"ifname": "a" * 16}, "ifname"),
    ("net", {"ifname": "a/b"}, "ifname"),
])
@pytest.mark.parametrize("verb", ["add", "delete", "check"])
def test_bad_identifiers_are_refused_before_any_plugin_runs(engine, fake, network, given, field, verb):
    # The attachment refuses a bad name when it is made; the verb, an attachment of another list.
    with pytest.raises(ConfigError) as info:
        getattr(engine, verb)(_net("noop", name=network, version="0.4.0"), _attachment(**given))
    assert info.value.path == field
    assert fake.calls() == []
    assert not (Path(engine.cache.directory) / "results").exists()


# -- DEL ----------------------------------------------------------------------------------------

def test_delete_runs_in_reverse_with_the_cached_result_and_removes_the_cache(engine, fake):
    fake.configure("noop", ADD={"result": _result("1.0.0")})
    network = _net("noop", "noop2", "noop3", version="0.4.0")
    attachment = _attachment(cni_args=[["K", "V"]])
    engine.add(network, attachment)
    fake.clear()
    assert engine.delete(network, attachment) is True
    assert _sequence(fake) == [("DEL", "noop3"), ("DEL", "noop2"), ("DEL", "noop")]
    assert all(c["stdin"]["prevResult"] == _result("0.4.0") for c in fake.calls())
    assert fake.calls()[0]["env"]["CNI_ARGS"] == "K=V"
    assert not _cache_file(engine).exists()


def test_delete_is_idempotent(engine, fake):
    network = _net("noop", "noop2")
    engine.add(network, _attachment())
    assert engine.delete(network, _attachment()) is True
    fake.clear()
    assert engine.delete(network, _attachment()) is False
    assert _sequence(fake) == [("DEL", "noop2"), ("DEL", "noop")]
    assert all("prevResult" not in c["stdin"] for c in fake.calls())


def test_delete_at_0_3_1_sends_no_prev_result(engine, fake):
    fake.configure("noop", ADD={"result": _result("0.3.1")})
    network = _net("noop", version="0.3.1")
    engine.add(network, _attachment())
    engine.delete(network, _attachment())
    assert "prevResult" not in fake.calls("DEL")[0]["stdin"]


@pytest.mark.parametrize("content", [b"", b"   ", b'{"kind":"cniCacheV1","contai', b"[]", b'{"kind":"other"}'])
def test_delete_with_an_unusable_cache_still_runs_then_removes_it(engine, fake, content):
    path = _cache_file(engine)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert engine.delete(_net("noop", "noop2"), _attachment()) is True
    assert _sequence(fake) == [("DEL", "noop2"), ("DEL", "noop")]
    assert all("prevResult" not in c["stdin"] for c in fake.calls())
    assert not path.exists()


def test_delete_with_a_legacy_cache_uses_its_result(engine, fake):
    path = _cache_file(engine)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"cniVersion": "0.2.0", "ip4": {"ip": "10.250.0.5/24"}}))
    assert engine.delete(_net("noop", version="1.0.0"), _attachment()) is True
    assert fake.calls("DEL")[0]["stdin"]["prevResult"] == \
        {"cniVersion": "1.0.0", "ips": [{"address": "10.250.0.5/24"}], "routes": []}
    assert not path.exists()


def test_delete_with_an_unconvertible_cached_result_runs_without_it(engine, fake):
    engine.cache.write(_cache.CacheEntry("net", "c1", "eth0", config=b"{}", result={"cniVersion": "9.9.9"}))
    assert engine.delete(_net("noop", version="1.0.0"), _attachment()) is True
    assert "prevResult" not in fake.calls("DEL")[0]["stdin"]


def test_delete_as_added_uses_the_cached_configuration_netns_and_arguments(engine, fake):
    added = parse_network_list({"cniVersion": "1.0.0", "name": "net",
                                "plugins": [{"type": "noop", "marker": "as added"}, {"type": "noop2"}]})
    engine.add(added, _attachment(netns="/var/run/netns/then", cni_args=[["K", "V"]]))
    entry = engine.cache.read(_attachment().key)
    fake.clear()
    assert engine.delete_as_added(entry, netns="/var/run/netns/ignored") is True
    assert _sequence(fake) == [("DEL", "noop2"), ("DEL", "noop")]
    first = fake.calls("DEL")[1]
    assert first["stdin"]["marker"] == "as added"
    assert (first["env"]["CNI_NETNS"], first["env"]["CNI_ARGS"]) == ("/var/run/netns/then", "K=V")
    assert not _cache_file(engine).exists()


def test_delete_as_added_takes_the_given_netns_where_the_entry_names_none(engine, fake):
    raw = {"cniVersion": "1.0.0", "name": "net", "plugins": [{"type": "noop"}]}
    engine.cache.write(_cache.CacheEntry("net", "c1", "eth0", config=json.dumps(raw).encode()))
    engine.delete_as_added(engine.cache.read(_attachment().key), netns="/var/run/netns/declared")
    assert fake.calls("DEL")[0]["env"]["CNI_NETNS"] == "/var/run/netns/declared"


def test_failed_delete_asks_every_plugin_and_keeps_the_cache_for_a_retry(engine, fake):
    network = _net("noop", "noop2", "noop3")
    engine.add(network, _attachment())
    fake.configure("noop3", DEL={"error": {"code": 999, "msg": "first"}})
    fake.configure("noop2", DEL={"stdout": "", "stderr": "second", "exit": 2})
    fake.clear()
    with pytest.raises(DeleteError) as info:
        engine.delete(network, _attachment())
    assert _sequence(fake) == [("DEL", "noop3"), ("DEL", "noop2"), ("DEL", "noop")]
    assert str(info.value) == ("DEL of network net failed (the cache entry is kept for a retry): "
                               "plugin noop3 failed (DEL) [code 999]: first; "
                               "other plugins also failed: plugin noop2 failed (DEL): second (exit status 2)")
    assert [e["plugin"] for e in info.value.to_dict()["other_errors"]] == ["noop2"]
    assert _cache_file(engine).exists()
    fake.configure("noop3")
    fake.configure("noop2")
    fake.clear()
    assert engine.delete(network, _attachment()) is True
    assert all("prevResult" in c["stdin"] for c in fake.calls())  # the kept cache served the retry
    assert not _cache_file(engine).exists()


# -- CHECK --------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["0.1.0", "0.2.0", "0.3.0", "0.3.1"])
def test_check_before_0_4_0_is_not_available(engine, fake, version):
    with pytest.raises(CheckNotAvailable) as info:
        engine.check(_net("noop", version=version), _attachment())
    assert str(info.value) == (f"CHECK is not available for network net at cniVersion {version} "
                               "(it needs 0.4.0 or later)")
    assert fake.calls() == []


def test_check_honours_disable_check(engine, fake):
    report = engine.check(_net("noop", version="1.0.0", disableCheck=True), _attachment())
    assert report.ran is False and report.tolerated == {}
    assert fake.calls() == []


def test_check_without_a_cached_result_is_not_available(engine, fake):
    with pytest.raises(CheckNotAvailable, match="nothing to CHECK: no cached result for c1/eth0 on network net"):
        engine.check(_net("noop"), _attachment())
    assert fake.calls() == []


def test_check_runs_in_order_with_the_cached_result(engine, fake):
    fake.configure("noop", ADD={"result": _result("1.0.0")})
    network = _net("noop", "noop2", version="0.4.0")
    engine.add(network, _attachment(cni_args=[["K", "V"]]))
    fake.clear()
    report = engine.check(network, _attachment(cni_args=[["K", "V"]]))
    assert report.ran is True and report.tolerated == {}
    assert _sequence(fake) == [("CHECK", "noop"), ("CHECK", "noop2")]
    assert all(c["stdin"]["prevResult"] == _result("0.4.0") for c in fake.calls())
    assert fake.calls()[0]["env"]["CNI_ARGS"] == "K=V"


def test_check_stops_at_the_first_failure(engine, fake):
    network = _net("noop", "noop2", "noop3")
    engine.add(network, _attachment())
    fake.configure("noop2", CHECK={"error": {"code": 999, "msg": "veth is gone"}})
    fake.clear()
    with pytest.raises(PluginError, match=r"plugin noop2 failed \(CHECK\) \[code 999\]: veth is gone"):
        engine.check(network, _attachment())
    assert _sequence(fake) == [("CHECK", "noop"), ("CHECK", "noop2")]


def test_check_with_an_unusable_cache_says_so(engine, fake):
    path = _cache_file(engine)
    path.parent.mkdir(parents=True)
    path.write_text("")
    with pytest.raises(CNIError, match=f"unusable cache file {path}: the file is empty"):
        engine.check(_net("noop"), _attachment())


def test_known_portmap_check_defect_is_a_warning(engine, fake):
    fake.install("portmap")
    network = _net("portmap", "noop")
    engine.add(network, _attachment())
    fake.configure("portmap", CHECK={"error": {"code": 999, "msg": "could not check ipv6 dnat: chain CNI-DN-1 not found"}})
    fake.clear()
    report = engine.check(network, _attachment())
    assert _sequence(fake) == [("CHECK", "portmap"), ("CHECK", "noop")]
    assert report.ran is True
    assert list(report.tolerated) == ["portmap-ipv6-check"]
    assert "ignored a CHECK failure of portmap: could not check ipv6 dnat" in report.tolerated["portmap-ipv6-check"]
    assert "containernetworking/plugins#819" in report.tolerated["portmap-ipv6-check"]


def test_other_portmap_check_failures_are_errors(engine, fake):
    fake.install("portmap")
    network = _net("portmap")
    engine.add(network, _attachment())
    fake.configure("portmap", CHECK={"error": {"code": 999, "msg": "could not check ipv4 dnat"}})
    with pytest.raises(PluginError, match="could not check ipv4 dnat"):
        engine.check(network, _attachment())


def test_known_defect_text_from_another_plugin_is_an_error(engine, fake):
    network = _net("noop")
    engine.add(network, _attachment())
    fake.configure("noop", CHECK={"error": {"code": 999, "msg": "could not check ipv6 dnat"}})
    with pytest.raises(PluginError):
        engine.check(network, _attachment())


def _dhcp_net(engine, fake, release, spec_versions=("0.4.0", "1.0.0")):
    """A bridge network with dhcp IPAM and a chained plugin, ADDed; the dhcp binary reports
    ``release`` (None: nothing says which release it is) and supports ``spec_versions``."""
    fake.install("bridge", ADD={"result": _result("1.0.0")})
    fake.install("dhcp", VERSION={"supportedVersions": list(spec_versions)})
    engine.executor.release = {"dhcp": release}.get
    network = parse_network_list({"cniVersion": "1.0.0", "name": "net", "plugins": [
        {"type": "bridge", "ipam": {"type": "dhcp"}}, {"type": "noop"}]})
    engine.add(network, _attachment())
    fake.clear()
    return network


@pytest.mark.parametrize("release", ["1.1.1", "v1.0.0", None])
def test_check_through_a_dhcp_daemon_that_leaks_a_lease_per_check_is_withheld(engine, fake, monkeypatch, release):
    """Issue 28: up to v1.1.1 the dhcp daemon starts another lease for every CHECK and keeps the
    one it forgets renewing, even after DEL, until its file descriptors run out. The plugin that
    would run dhcp's CHECK is not sent CHECK; the attachment is verified in its namespace instead
    (once); the plugins after it are CHECKed. A binary that does not say its release and does not
    speak spec 1.1.0 (v1.6.0 on) may be such a release."""
    network = _dhcp_net(engine, fake, release)
    verified = []
    monkeypatch.setattr(_engine, "verify_in_place", lambda attachment, result: verified.append(result["ips"]))

    report = engine.check(network, _attachment())

    assert _checks(fake) == ["noop"]
    assert verified == [_result("1.0.0")["ips"]]
    assert list(report.withheld) == ["dhcp-lease-per-check"] and report.tolerated == {}
    assert "CHECK is not sent to bridge with dhcp" in report.withheld["dhcp-lease-per-check"]
    assert "containernetworking/plugins#792" in report.withheld["dhcp-lease-per-check"]
    assert "plugins v1.2.0 and later can be CHECKed" in report.withheld["dhcp-lease-per-check"]
    label = "v" + release.lstrip("v") if release else "older than v1.6.0"
    assert f"the installed dhcp is {label})" in report.withheld["dhcp-lease-per-check"]


def test_a_check_that_runs_no_withheld_type_asks_no_rules(engine, fake, monkeypatch):
    """A converged CHECK of plugins none of whose types can have CHECK withheld imports no
    plugin rules (names.WITHHELD_CHECK_TYPES answers); one through dhcp asks them."""
    fake.install("bridge", ADD={"result": _result("1.0.0")})
    network = parse_network_list({"cniVersion": "1.0.0", "name": "net", "plugins": [
        {"type": "bridge", "ipam": {"type": "host-local"}}, {"type": "noop"}]})
    engine.add(network, _attachment())
    asked = []
    monkeypatch.setattr(_engine, "plugin_rules", lambda: asked.append("rules") or registry)

    engine.check(network, _attachment())
    assert asked == [] and _checks(fake) == ["bridge", "noop"]
    assert engine._withheld_check({"type": "bridge", "ipam": {"type": "dhcp"}}) is not None and asked == ["rules"]


@pytest.mark.parametrize("release", ["1.2.0", "1.9.1"])
def test_a_dhcp_daemon_without_the_leak_is_checked(engine, fake, release):
    network = _dhcp_net(engine, fake, release)
    report = engine.check(network, _attachment())
    assert _checks(fake) == ["bridge", "noop"] and report.withheld == {}


def test_a_dhcp_binary_of_unknown_release_that_speaks_1_1_0_is_checked(engine, fake):
    network = _dhcp_net(engine, fake, None, spec_versions=("0.4.0", "1.0.0", "1.1.0"))
    report = engine.check(network, _attachment())
    assert _checks(fake) == ["bridge", "noop"] and report.withheld == {}


def test_an_attachment_not_in_place_fails_the_check_that_is_withheld(engine, fake, monkeypatch):
    network = _dhcp_net(engine, fake, "1.1.1")

    def missing(attachment, _result):
        raise NotInPlaceError(f"interface {attachment.ifname} is missing")
    monkeypatch.setattr(_engine, "verify_in_place", missing)
    with pytest.raises(NotInPlaceError, match="interface eth0 is missing"):
        engine.check(network, _attachment())
    assert _checks(fake) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="joins a network namespace (needs root)")
def test_verify_in_place_reads_the_interface_and_its_address_in_the_namespace():
    own = "/proc/self/ns/net"  # its lo carries 127.0.0.1/8
    loopback = {"cniVersion": "1.0.0", "ips": [{"address": "127.0.0.1/8"}]}
    _engine.verify_in_place(Attachment("net", "c1", own, "lo"), loopback)
    with pytest.raises(NotInPlaceError, match=r"lo in network namespace /proc/self/ns/net does not carry "
                                              r"127\.0\.0\.2/8, the address its ADD gave it \(it has 127\.0\.0\.1/8\)"):
        _engine.verify_in_place(Attachment("net", "c1", own, "lo"), {"ips": [{"address": "127.0.0.2/8"}]})
    with pytest.raises(NotInPlaceError, match="interface cnit-none is missing from network namespace"):
        _engine.verify_in_place(Attachment("net", "c1", own, "cnit-none"), loopback)


def test_dhcp_records_the_check_defect_fixed_in_1_2_0():
    assert [(d.name, d.fixed_in, d.withheld) for _b, d in registry.withheld_checks(
        {"type": "macvlan", "ipam": {"type": "dhcp"}})] == [("dhcp-lease-per-check", "1.2.0", True)]
    assert registry.withheld_checks({"type": "macvlan", "ipam": {"type": "host-local"}}) == []
    assert registry.withheld_checks({"type": "bridge"}) == []


@pytest.mark.parametrize("release, versions, affected", [
    ("1.1.1", ["1.0.0"], True), ("v1.1.1", ["1.0.0"], True), ("1.2.0", ["1.0.0"], False),
    ("1.9.1", ["1.1.0"], False), (None, ["0.4.0", "1.0.0"], True), (None, ["1.0.0", "1.1.0"], False),
])
def test_which_binaries_may_have_the_dhcp_check_defect(release, versions, affected):
    assert dhcp_rules.LEASE_PER_CHECK.may_affect(binary_releases(release, versions)) is affected


# -- GC -----------------------------------------------------------------------------------------

def _add_three(engine, network):
    for cid in ("c1", "c2", "c3"):
        engine.add(network, _attachment(cid, netns=f"/var/run/netns/{cid}", cni_args=[["N", cid]]))


def test_gc_deletes_stale_attachments_and_sends_gc_with_both_keys(engine, fake):
    network = _net("noop", "noop2", version="1.1.0")
    _add_three(engine, network)
    engine.add(_net("noop", name="other", version="1.1.0"), _attachment("c9", network="other"))
    fake.clear()
    report = engine.gc(network, [("c1", "eth0")])
    assert report == GCReport(deleted=[
        {"network": "net", "container_id": "c2", "ifname": "eth0", "netns": "/var/run/netns/c2", "managed": True},
        {"network": "net", "container_id": "c3", "ifname": "eth0", "netns": "/var/run/netns/c3", "managed": True}])
    assert _sequence(fake) == [("DEL", "noop2"), ("DEL", "noop"), ("DEL", "noop2"), ("DEL", "noop"),
                               ("GC", "noop"), ("GC", "noop2")]
    dels = fake.calls("DEL")
    assert [(c["env"]["CNI_CONTAINERID"], c["env"]["CNI_NETNS"], c["env"]["CNI_ARGS"]) for c in dels[::2]] == \
        [("c2", "/var/run/netns/c2", "N=c2"), ("c3", "/var/run/netns/c3", "N=c3")]
    valid = [{"containerID": "c1", "ifname": "eth0"}]
    for call in fake.calls("GC"):
        assert call["stdin"]["cni.dev/valid-attachments"] == valid
        assert call["stdin"]["cni.dev/attachments"] == valid
        assert "prevResult" not in call["stdin"] and "runtimeConfig" not in call["stdin"]
        assert call["env"] == {"CNI_COMMAND": "GC", "CNI_CONTAINERID": "", "CNI_NETNS": "", "CNI_IFNAME": "",
                               "CNI_ARGS": "", "CNI_PATH": ":".join(engine.executor.cni_path)}
    assert _cache_file(engine, container_id="c1").exists()
    assert not _cache_file(engine, container_id="c2").exists()
    assert _cache_file(engine, network="other", container_id="c9").exists()


def test_gc_deletes_with_the_capability_args_recorded_at_add(engine, fake):
    raw = {"cniVersion": "1.0.0", "name": "net", "plugins": [{"type": "noop", "capabilities": {"portMappings": True}}]}
    mappings = [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]
    engine.add(parse_network_list(raw), _attachment(capability_args={"portMappings": mappings}))
    fake.clear()
    engine.gc(parse_network_list(raw), [])
    assert fake.calls("DEL")[0]["stdin"]["runtimeConfig"] == {"portMappings": mappings}


def test_gc_keeps_what_the_keep_predicate_accepts(engine, fake):
    network = _net("noop", version="1.1.0")
    _add_three(engine, network)
    fake.clear()
    report = engine.gc(network, [("c3", "eth0")], keep=lambda entry: entry.container_id == "c2")
    assert [d["container_id"] for d in report.deleted] == ["c1"]
    assert fake.calls("GC")[0]["stdin"]["cni.dev/valid-attachments"] == \
        [{"containerID": "c3", "ifname": "eth0"}, {"containerID": "c2", "ifname": "eth0"}]


def test_gc_with_nothing_valid_sends_an_empty_list(engine, fake):
    network = _net("noop", version="1.1.0")
    engine.gc(network, [])
    assert fake.calls("GC")[0]["stdin"]["cni.dev/valid-attachments"] == []
    assert fake.calls("GC")[0]["stdin"]["cni.dev/attachments"] == []


def test_gc_before_1_1_0_only_deletes_stale_attachments(engine, fake):
    network = _net("noop", version="1.0.0")
    _add_three(engine, network)
    fake.clear()
    report = engine.gc(network, [("c1", "eth0"), ("c3", "eth0")])
    assert [d["container_id"] for d in report.deleted] == ["c2"]
    assert _sequence(fake) == [("DEL", "noop")]


def test_gc_collects_every_error(engine, fake):
    network = _net("noop", "noop2", version="1.1.0")
    _add_three(engine, network)
    fake.configure("noop2", DEL={"error": {"code": 999, "msg": "del failed"}})
    fake.configure("noop", GC={"error": {"code": 999, "msg": "gc failed"}})
    fake.clear()
    report = engine.gc(network, [])
    assert report.deleted == []
    failed_del = "DEL of network net failed (the cache entry is kept for a retry)"
    assert [e["msg"].split(": ", 1)[0] for e in report.errors] == [failed_del] * 3 + ["plugin noop failed (GC) [code 999]"]
    assert ("GC", "noop2") in _sequence(fake)  # the failed GC of noop did not stop noop2's
    assert _cache_file(engine, container_id="c2").exists()


def test_gc_honours_disable_gc(engine, fake):
    network = _net("noop", version="1.1.0", disableGC=True)
    engine.add(network, _attachment())
    fake.clear()
    assert engine.gc(network, []) == GCReport(skipped=True)
    assert fake.calls() == []
    assert _cache_file(engine).exists()


def test_gc_waits_for_an_add_of_the_same_network_in_flight(engine, fake, go):
    fake.configure("noop", ADD={"wait_for": str(go)})
    network = _net("noop", version="1.1.0")
    outcome = {}
    add = threading.Thread(target=lambda: outcome.setdefault("add", engine.add(network, _attachment())))
    add.start()
    _wait_for(lambda: fake.calls("ADD"))
    gc = threading.Thread(target=lambda: outcome.setdefault("gc", engine.gc(network, [])))
    gc.start()
    gc.join(0.5)
    # While the ADD is in flight GC must not have looked at the cache nor called any plugin.
    assert gc.is_alive() and _sequence(fake) == [("ADD", "noop")]
    go.touch()
    add.join(10)
    gc.join(10)
    # GC ran after the ADD finished: it saw the new attachment as stale and deleted it.
    assert _sequence(fake) == [("ADD", "noop"), ("DEL", "noop"), ("GC", "noop")]
    assert [d["container_id"] for d in outcome["gc"].deleted] == ["c1"]


def test_gc_waits_for_an_add_in_another_process(engine, fake, go):
    fake.configure("noop", ADD={"wait_for": str(go)})
    network = _net("noop", version="1.1.0")
    add = multiprocessing.get_context("fork").Process(target=engine.add, args=(network, _attachment()))
    add.start()
    _wait_for(lambda: fake.calls("ADD"))
    gc = threading.Thread(target=engine.gc, args=(network, [("c1", "eth0")]))
    gc.start()
    gc.join(0.5)
    assert gc.is_alive() and _sequence(fake) == [("ADD", "noop")]
    go.touch()
    add.join(10)
    gc.join(10)
    assert add.exitcode == 0
    assert _sequence(fake) == [("ADD", "noop"), ("GC", "noop")]  # c1 is valid: kept
    assert _cache_file(engine).exists()


def _wait_for(condition, seconds=10):
    event = threading.Event()
    for _attempt in range(int(seconds / 0.01)):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("condition not met")


# -- concurrency of attachments -----------------------------------------------------------------

def test_attachments_of_different_containers_run_in_parallel(engine, fake, go):
    fake.configure("noop", ADD={"wait_for": str(go)})
    fake.configure("noop2", ADD={"result": _result("1.0.0")})
    slow, quick = _net("noop"), _net("noop2")
    thread = threading.Thread(target=engine.add, args=(slow, _attachment("c1")))
    thread.start()
    _wait_for(lambda: fake.calls("ADD"))
    engine.add(quick, _attachment("c2", netns="/var/run/netns/other"))  # completes while c1's ADD is held up
    assert _sequence(fake) == [("ADD", "noop"), ("ADD", "noop2")]
    go.touch()
    thread.join(10)


def test_adds_of_one_interface_name_into_one_namespace_are_serialised(engine, fake, go):
    fake.configure("noop", ADD={"wait_for": str(go)})
    first = threading.Thread(target=engine.add, args=(_net("noop"), _attachment("c1")))
    first.start()
    _wait_for(lambda: fake.calls("ADD"))
    second = threading.Thread(target=engine.add, args=(_net("noop2"), _attachment("c2")))
    second.start()
    second.join(0.5)
    assert second.is_alive() and _sequence(fake) == [("ADD", "noop")]
    go.touch()
    first.join(10)
    second.join(10)
    assert _sequence(fake) == [("ADD", "noop"), ("ADD", "noop2")]


def test_operations_on_one_attachment_are_serialised(engine, fake, go):
    fake.configure("noop", ADD={"wait_for": str(go)})
    network = _net("noop")
    add = threading.Thread(target=engine.add, args=(network, _attachment()))
    add.start()
    _wait_for(lambda: fake.calls("ADD"))
    delete = threading.Thread(target=engine.delete, args=(network, _attachment()))
    delete.start()
    delete.join(0.5)
    assert delete.is_alive() and _sequence(fake) == [("ADD", "noop")]
    go.touch()
    add.join(10)
    delete.join(10)
    assert _sequence(fake) == [("ADD", "noop"), ("DEL", "noop")]
    assert not _cache_file(engine).exists()


# -- STATUS -------------------------------------------------------------------------------------

def test_status_reports_ready_and_codes_50_and_51(engine, fake):
    fake.install("noop4")
    fake.configure("noop2", STATUS={"error": {"code": 50, "msg": "no IPs left"}})
    fake.configure("noop3", STATUS={"error": {"code": 51, "msg": "uplink down"}})
    fake.configure("noop4", STATUS={"error": {"code": 4, "msg": "unknown CNI_COMMAND: STATUS"}})
    statuses = engine.status(_net("noop", "noop2", "noop3", "noop4", version="1.1.0"))
    assert [status.to_dict() for status in statuses] == [
        {"plugin": "noop", "ready": True, "state": "ready", "code": None, "msg": ""},
        {"plugin": "noop2", "ready": False, "state": "not ready", "code": 50, "msg": "no IPs left"},
        {"plugin": "noop3", "ready": False, "state": "degraded", "code": 51, "msg": "uplink down"},
        {"plugin": "noop4", "ready": False, "state": "error", "code": 4, "msg": "unknown CNI_COMMAND: STATUS"},
    ]
    call = fake.calls("STATUS")[0]
    assert call["env"]["CNI_PATH"] == ":".join(engine.executor.cni_path) and call["env"]["CNI_CONTAINERID"] == ""
    assert call["stdin"] == {"type": "noop", "name": "net", "cniVersion": "1.1.0"}


def test_status_before_1_1_0_runs_nothing(engine, fake):
    assert engine.status(_net("noop", version="1.0.0")) is None
    assert fake.calls() == []


# -- timeouts through the engine ----------------------------------------------------------------

def test_hung_plugin_times_out_and_the_add_is_rolled_back(tmp_path, fake):
    # 3 s: long enough for the other calls of the test double (a Python script) on a loaded
    # machine, which took over 0.5 s there; the hung one sleeps 60.
    engine = Engine([fake.directory], str(tmp_path / "cache"), timeout=3)
    fake.configure("noop2", ADD={"sleep": 60})
    with pytest.raises(OperationError, match=r"plugin noop2 failed \(ADD\): timed out after 3s and was killed"):
        engine.add(_net("noop", "noop2"), _attachment())
    assert _sequence(fake) == [("ADD", "noop"), ("ADD", "noop2"), ("DEL", "noop2"), ("DEL", "noop")]
    assert not _cache_file(engine).exists()
    assert os.listdir(Path(engine.cache.directory) / _cache.LOCKS_SUBDIR)  # locks are where the docs say


# -- interrupted ADDs (intent marker) -----------------------------------------------------------

def test_add_first_deletes_what_an_interrupted_add_left(engine, fake):
    network = _net("noop", "noop2")
    engine.cache.mark_pending(AttachmentKey("net", "c1", "eth0"))  # as if a run died mid-ADD
    assert engine.cache.is_pending(_attachment().key) is True
    engine.add(network, _attachment())
    assert _sequence(fake) == [("DEL", "noop2"), ("DEL", "noop"), ("ADD", "noop"), ("ADD", "noop2")]
    assert all("prevResult" not in c["stdin"] for c in fake.calls("DEL"))
    assert engine.cache.is_pending(_attachment().key) is False


def test_add_refuses_to_start_while_an_interrupted_add_cannot_be_cleaned_up(engine, fake):
    fake.configure("noop", DEL={"error": {"code": 999, "msg": "stuck"}})
    engine.cache.mark_pending(AttachmentKey("net", "c1", "eth0"))
    with pytest.raises(OperationError, match="cannot clean up an interrupted ADD of network net: plugin noop failed"):
        engine.add(_net("noop"), _attachment())
    assert fake.calls("ADD") == []
    assert engine.cache.is_pending(_attachment().key) is True


def test_rollback_that_fails_leaves_the_marker_for_the_next_run(engine, fake):
    fake.configure("noop", ADD={"error": {"code": 7, "msg": "add broke"}}, DEL={"error": {"code": 999, "msg": "del broke"}})
    with pytest.raises(OperationError):
        engine.add(_net("noop"), _attachment())
    assert engine.cache.is_pending(_attachment().key) is True
    fake.configure("noop", ADD={"error": {"code": 7, "msg": "add broke"}})
    with pytest.raises(OperationError):
        engine.add(_net("noop"), _attachment())
    assert engine.cache.is_pending(_attachment().key) is False


def test_successful_delete_clears_the_marker(engine, fake):
    engine.cache.mark_pending(AttachmentKey("net", "c1", "eth0"))
    engine.delete(_net("noop"), _attachment())
    assert engine.cache.is_pending(_attachment().key) is False


def test_finished_add_intent_is_cleared_only_with_a_complete_cache_entry(engine, fake):
    network = _net("noop")
    engine.cache.mark_pending(AttachmentKey("net", "c1", "eth0"))
    _attach._clear_finished_intent(engine, _attach.Desired(None, _attachment()))
    assert engine.cache.is_pending(_attachment().key) is True  # no entry: the ADD did not finish
    _cache_file(engine).parent.mkdir(parents=True)
    _cache_file(engine).write_text("")
    _attach._clear_finished_intent(engine, _attach.Desired(None, _attachment()))
    assert engine.cache.is_pending(_attachment().key) is True  # unusable entry proves nothing
    _cache_file(engine).unlink()
    engine.add(network, _attachment())  # a real, complete entry (the DEL of the marker first)
    engine.cache.mark_pending(AttachmentKey("net", "c1", "eth0"))  # as if killed before clearing it
    _attach._clear_finished_intent(engine, _attach.Desired(None, _attachment()))
    assert engine.cache.is_pending(_attachment().key) is False


def test_known_tuning_check_defect_is_a_warning(engine, fake):
    fake.install("tuning")
    network = _net("tuning")
    engine.add(network, _attachment())
    fake.configure("tuning", CHECK={"error": {"code": 999, "msg": 'sysctl "net/ipv4/conf/IFNAME/rp_filter" not found'}})
    report = engine.check(network, _attachment())
    assert list(report.tolerated) == ["tuning-ifname-sysctl"]
    assert "containernetworking/plugins#885" in report.tolerated["tuning-ifname-sysctl"]


def test_a_bridge_mac_that_moved_is_checked_again_with_the_current_mac(engine, fake, tmp_path, monkeypatch):
    monkeypatch.setattr(bridge_rules, "SYSFS_NET", str(tmp_path))
    (tmp_path / "cnit-br0").mkdir()
    (tmp_path / "cnit-br0" / "address").write_text("0a:58:0a:00:00:09\n")
    fake.install("bridge", ADD={"result": {"cniVersion": "1.0.0", "interfaces": [
        {"name": "cnit-br0", "mac": "0a:58:0a:00:00:01"}, {"name": "eth0", "mac": "0a:58:0a:00:00:02", "sandbox": "/x"}]}})
    network = _net("bridge")
    engine.add(network, _attachment())
    moved = {"error": {"code": 999, "msg": "Bridge interface cnit-br0 Mac doesn't match: 0a:58:0a:00:00:09"}}
    fake.configure("bridge", CHECK=[dict(moved, if_stdin="0a:58:0a:00:00:01")])  # passes with the current MAC
    fake.clear()

    report = engine.check(network, _attachment())

    assert list(report.tolerated) == ["bridge-mac-moved"]
    assert [[i["mac"] for i in c["stdin"]["prevResult"]["interfaces"]] for c in fake.calls("CHECK")] == [
        ["0a:58:0a:00:00:01", "0a:58:0a:00:00:02"], ["0a:58:0a:00:00:09", "0a:58:0a:00:00:02"]]
    fake.configure("bridge", CHECK=moved)  # fails with the current MAC too: something else is wrong
    with pytest.raises(PluginError, match="Mac doesn't match"):
        engine.check(network, _attachment())
    (tmp_path / "cnit-br0" / "address").unlink()
    fake.clear()
    with pytest.raises(PluginError, match="Mac doesn't match"):  # the bridge is gone: no second try
        engine.check(network, _attachment())
    assert len(fake.calls("CHECK")) == 1


def test_a_container_mac_that_changed_is_not_tolerated(engine, fake):
    fake.install("bridge")
    network = _net("bridge")
    engine.add(network, _attachment())
    fake.configure("bridge", CHECK={"error": {"code": 999, "msg": "Interface eth0 Mac doesn't match: 0a:58:0a:00:00:07"}})
    with pytest.raises(PluginError, match="Interface eth0 Mac doesn't match"):
        engine.check(network, _attachment())


# -- the executor seam --------------------------------------------------------------------------

def test_every_plugin_call_goes_through_the_executor_given(tmp_path):
    executor = FakeExecutor(add_result=json.dumps(_result("1.0.0")).encode())
    engine = Engine([], str(tmp_path / "cache"), executor=executor)
    network = _net("first", "second")
    engine.add(network, _attachment(cni_args=[["K", "V"]]))
    engine.check(network, _attachment(cni_args=[["K", "V"]]))
    engine.delete(network, _attachment())
    assert [call[:2] for call in executor.calls] == [
        ("first", "ADD"), ("second", "ADD"), ("first", "CHECK"), ("second", "CHECK"), ("second", "DEL"), ("first", "DEL")]
    assert executor.calls[0][2:] == ("c1", "eth0", "K=V")


def test_a_route_without_gw_is_checked_again_through_the_gateway_it_was_installed_with(engine, fake):
    result = {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": "/x"}],
              "ips": [{"address": "10.9.0.5/24", "gateway": "10.9.0.1", "interface": 0}],
              "routes": [{"dst": "10.251.0.0/16"}, {"dst": "10.252.0.0/16", "gw": "10.9.0.1"}]}
    fake.install("bridge", ADD={"result": result})
    network = _net("bridge")
    engine.add(network, _attachment())
    missing = {"error": {"code": 999,
                         "msg": "Expected Route {Dst:{IP:10.251.0.0 Mask:ffff0000} GW:<nil>} not found in routing table"}}
    fake.configure("bridge", CHECK=[dict(missing, if_stdin='"10.251.0.0/16"}')])  # fails only without the gw
    fake.clear()

    report = engine.check(network, _attachment())

    assert list(report.tolerated) == ["bridge-route-without-gw"]
    assert [c["stdin"]["prevResult"]["routes"][0] for c in fake.calls("CHECK")] == [
        {"dst": "10.251.0.0/16"}, {"dst": "10.251.0.0/16", "gw": "10.9.0.1"}]
    fake.configure("bridge", CHECK=missing)  # still missing through the gateway: really gone
    with pytest.raises(PluginError, match="not found in routing table"):
        engine.check(network, _attachment())
