# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A network as a conflist file: name, building, host validation, comparison, removal set."""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest
from fake_executor import FakeExecutor

from ansible_collections.cnikit.cni.plugins.module_utils import _network_file as netfile
from ansible_collections.cnikit.cni.plugins.module_utils._errors import CNIError, ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._exec import PluginExecutor
from ansible_collections.cnikit.cni.plugins.module_utils._validate import ValidationReport, validate_network_list

LOOPBACK = [{"type": "loopback"}]


def write(path, conf):
    path.write_text(json.dumps(conf))
    return str(path)


def test_default_file_name_is_priority_then_name():
    assert netfile.conflist_path("/etc/cni/net.d", "web") == "/etc/cni/net.d/10-web.conflist"
    assert netfile.conflist_path("/etc/cni/net.d", "web", 5) == "/etc/cni/net.d/05-web.conflist"
    assert netfile.conflist_path("/d", "web", 5, "87-podman.conflist") == "/d/87-podman.conflist"


@pytest.mark.parametrize("priority, filename, option", [
    (100, None, "priority"), (-1, None, "priority"), (True, None, "priority"),
    (10, "../x.conflist", "filename"), (10, ".hidden.conflist", "filename"), (10, "web.conf", "filename"),
    (10, "", "filename"),
])
def test_bad_placement(priority, filename, option):
    with pytest.raises(ConfigError) as raised:
        netfile.conflist_path("/d", "web", priority, filename)
    assert raised.value.path == option


def test_build_from_plugins():
    conf, report, converted = netfile.build_conflist("web", LOOPBACK, disable_check=True, cni_versions=["1.0.0", "1.1.0"])
    assert conf == {"cniVersion": "1.0.0", "name": "web", "plugins": LOOPBACK, "disableCheck": True,
                    "cniVersions": ["1.0.0", "1.1.0"]}
    assert report.errors == [] and not converted


def test_build_from_text_keeps_duplicate_findings_and_overrides_envelope():
    text = '{"cniVersion": "0.4.0", "name": "web", "plugins": [{"type": "loopback", "type": "loopback"}]}'
    conf, report, _converted = netfile.build_conflist("web", config=text, cni_version="1.0.0")
    assert conf["cniVersion"] == "1.0.0"
    assert [f.path for f in report.warnings] == ["plugins[0].type"]


def test_build_turns_yaml_keys_into_json_keys():
    conf, _report, _converted = netfile.build_conflist("web", [{"type": "tuning", "sysctl": {1: "x"}}])
    assert conf["plugins"][0]["sysctl"] == {"1": "x"}


def test_build_from_mapping_fills_the_name_and_does_not_modify_it():
    config = {"cniVersion": "1.0.0", "plugins": LOOPBACK}
    conf, _report, _converted = netfile.build_conflist("web", config=config)
    assert conf["name"] == "web" and "name" not in config


def test_build_wraps_a_single_plugin_network_as_libcni_loads_it():
    """libcni's ConfListFromConf: the list takes name and cniVersion, and its plugin is the whole
    object, those two included (so it is the list runtimes cache for the .conf); no other key
    moves (disableCheck stays in the plugin, so CHECK still runs)."""
    single = {"cniVersion": "0.4.0", "name": "web", "type": "bridge", "disableCheck": True,
              "ipam": {"type": "host-local", "subnet": "10.9.0.0/24"}}
    for config in (single, json.dumps(single)):
        conf, report, converted = netfile.build_conflist("web", config=config)
        assert converted and report.errors == []
        assert conf == {"cniVersion": "0.4.0", "name": "web", "plugins": [single]}


@pytest.mark.parametrize("config, given, plugin", [
    ({"type": "loopback"}, {"cni_version": "1.0.0"}, {"type": "loopback", "name": "web", "cniVersion": "1.0.0"}),
    ({"cniVersion": "0.4.0", "type": "loopback"}, {"cni_version": "1.0.0"},
     {"type": "loopback", "name": "web", "cniVersion": "1.0.0"}),
    ({"name": "web", "type": "loopback"}, {}, {"type": "loopback", "name": "web"}),
])
def test_the_plugin_of_a_wrapped_single_plugin_network_holds_the_lists_name_and_version(config, given, plugin):
    conf, _report, converted = netfile.build_conflist("web", config=config, **given)
    assert converted and conf["plugins"] == [plugin]
    assert conf["name"] == "web" and conf["cniVersion"] == plugin.get("cniVersion", "")


def test_a_single_plugin_network_without_cni_version_is_wrapped_as_libcni_does_and_only_warned_of():
    """ConfListFromConf gives the list Go's zero value, "", which plugins read as unset (0.1.0)."""
    conf, _report, _converted = netfile.build_conflist("web", config={"name": "web", "type": "loopback"})
    assert conf["cniVersion"] == ""
    report = validate_network_list(conf)
    assert report.errors == []
    assert [(f.path, f.message) for f in report.warnings] == [
        ("cniVersion", "is not set: plugins then read the configuration as version 0.1.0")]


def test_a_single_plugin_network_given_as_text_is_judged_by_its_plugins_rules():
    text = '{"cniVersion": "1.0.0", "name": "web", "type": "tuning", "sysctl": {"net.a": "1", "net.a": "2"}}'
    _conf, report, converted = netfile.build_conflist("web", config=text)
    assert converted and [f.path for f in report.errors] == ['plugins[0].sysctl["net.a"]']


def test_a_list_without_plugins_is_not_taken_for_a_single_plugin_network():
    conf, _report, converted = netfile.build_conflist("web", config={"cniVersion": "1.0.0", "name": "web"})
    assert not converted and "plugins" not in conf


@pytest.mark.parametrize("name, config, path", [
    ("web", {"name": "other", "plugins": LOOPBACK}, "config.name"),
    ("web", "{not json", "config"),
    ("web", "[1]", "config"),
    ("web", 42, "config"),
    ("bad/name", None, "name"),
    ("web", {"plugins": [{"type": "loopback", "x": {1, 2}}]}, "config"),
])
def test_build_rejects(name, config, path):
    with pytest.raises(ConfigError) as raised:
        netfile.build_conflist(name, LOOPBACK, config)
    assert raised.value.path == path


def test_normalise_orders_the_envelope_first():
    data, conf = netfile.normalise({"plugins": LOOPBACK, "name": "web", "cniVersion": "1.0.0"})
    assert data.decode().startswith('{\n  "cniVersion": "1.0.0",\n  "name": "web",\n  "plugins": [')
    assert data.endswith(b"}\n")
    assert list(conf) == ["cniVersion", "name", "plugins"]


def test_same_content_ignores_formatting():
    conf = {"cniVersion": "1.0.0", "name": "web", "plugins": LOOPBACK}
    assert netfile.same_content(json.dumps(conf, indent=8).encode(), conf)
    assert not netfile.same_content(None, conf)
    assert not netfile.same_content(b"{broken", conf)
    assert not netfile.same_content(json.dumps(dict(conf, cniVersion="0.4.0")).encode(), conf)


def test_validate_on_host_skips_own_file_and_reports_broken_files_read_first(tmp_path):
    own = write(tmp_path / "10-web.conflist", {"cniVersion": "1.0.0", "name": "web", "plugins": LOOPBACK})
    (tmp_path / "05-broken.conflist").write_text("{")
    (tmp_path / "20-broken.conflist").write_text("{")
    conf = {"cniVersion": "1.0.0", "name": "web", "plugins": LOOPBACK}
    report = netfile.validate_on_host(conf, own, str(tmp_path), ValidationReport())
    assert [f.message.split(",")[0] for f in report.errors] == [str(tmp_path / "05-broken.conflist")]
    assert len(report.warnings) == 1 and "20-broken.conflist" in report.warnings[0].message


def test_validate_on_host_against_installed_binaries(tmp_path):
    plugin = tmp_path / "bin" / "loopback"
    plugin.parent.mkdir()
    plugin.write_text('#!/bin/sh\necho \'{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}\'\n')
    plugin.chmod(0o755)
    conf = {"cniVersion": "1.1.0", "name": "web", "plugins": LOOPBACK}
    report = netfile.validate_on_host(conf, str(tmp_path / "10-web.conflist"), str(tmp_path / "missing"),
                                      ValidationReport(), PluginExecutor([str(plugin.parent)]))
    assert [f.path for f in report.errors] == ["cniVersion"]
    assert "supports 0.4.0, 1.0.0" in report.errors[0].message


def test_validate_on_host_takes_the_release_and_versions_from_the_executor(tmp_path):
    conf = {"cniVersion": "1.0.0", "name": "web", "plugins": [{"type": "bridge", "portIsolation": True}]}
    executor = FakeExecutor(versions={"bridge": ["0.4.0", "1.0.0"]}, releases={"bridge": "1.1.1"})
    report = netfile.validate_on_host(conf, str(tmp_path / "10-web.conflist"), str(tmp_path), ValidationReport(),
                                      executor)
    assert report.errors == []
    assert [(f.path, "bridge plugin is v1.1.1" in f.message) for f in report.warnings] == [
        ("plugins[0].portIsolation", True)]
    assert executor.probes == [executor.find("bridge")]


def test_files_declaring(tmp_path):
    own = str(tmp_path / "10-web.conflist")
    write(tmp_path / "10-web.conflist", {"cniVersion": "1.0.0", "name": "web", "plugins": LOOPBACK})
    by_hand = write(tmp_path / "50-web-copy.conflist", {"cniVersion": "1.0.0", "name": "web", "plugins": LOOPBACK})
    write(tmp_path / "60-other.conflist", {"cniVersion": "1.0.0", "name": "other", "plugins": LOOPBACK})
    old_style = write(tmp_path / "99-web.conf", {"cniVersion": "1.0.0", "name": "web", "type": "loopback"})
    assert netfile.files_declaring(str(tmp_path), "web", own) == [own, by_hand, old_style]
    missing = tmp_path / "missing"
    assert netfile.files_declaring(str(missing), "web", str(missing / "10-web.conflist")) == []


@pytest.mark.parametrize("mode, expected", [("0644", 0o644), ("600", 0o600), (0o640, 0o640)])
def test_parse_mode(mode, expected):
    assert netfile.parse_mode(mode) == expected


@pytest.mark.parametrize("mode", ["rw-r--r--", "0899", "17777", -1])
def test_parse_mode_rejects(mode):
    with pytest.raises(ConfigError):
        netfile.parse_mode(mode)


def test_resolve_id():
    assert netfile.resolve_id(None, "owner") is None
    assert netfile.resolve_id("root", "owner") == 0
    assert netfile.resolve_id("0", "group") == 0
    with pytest.raises(ConfigError):
        netfile.resolve_id("no-such-user-cnit", "owner")


def test_ownership_changes_in_ansible_diff_form(tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    os.chmod(path, 0o600)
    os.chown(path, 0, 0)
    assert netfile.ownership_changes(str(path), 0o644, 1, None) == {
        "before": {"mode": "0600", "owner": 0}, "after": {"mode": "0644", "owner": 1}}
    assert netfile.ownership_changes(str(path), 0o600, 0, 0) == {}
    assert netfile.ownership_changes(str(path), 0o600, None, None) == {}


def test_write_file_replaces_atomically(tmp_path):
    path = tmp_path / "f"
    path.write_text("old")
    inode = os.stat(path).st_ino
    netfile.write_file(str(path), b"new", 0o640, None, 1)
    st = os.stat(path)
    assert path.read_bytes() == b"new" and st.st_ino != inode
    assert (stat.S_IMODE(st.st_mode), st.st_gid) == (0o640, 1)


def _rename_blocked(monkeypatch, code):
    """A rename refused the way a bind-mounted target refuses it (EBUSY), or another way."""
    def refuse(src, dst, **_dir_fds):
        raise OSError(code, os.strerror(code), dst)
    monkeypatch.setattr(os, "replace", refuse)


def test_write_file_in_place_only_with_unsafe_writes(tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_text("old content, longer than the new")
    os.chmod(path, 0o644)
    inode = os.stat(path).st_ino
    _rename_blocked(monkeypatch, errno.EBUSY)
    with pytest.raises(CNIError, match="unsafe_writes=true"):
        netfile.write_file(str(path), b"new", 0o600, None, None)
    assert path.read_text() == "old content, longer than the new"
    netfile.write_file(str(path), b"new", 0o600, None, 1, unsafe_writes=True)
    st = os.stat(path)
    assert path.read_bytes() == b"new" and st.st_ino == inode
    assert (stat.S_IMODE(st.st_mode), st.st_gid) == (0o600, 1)
    assert os.listdir(tmp_path) == ["f"], "a temporary file was left behind"


def test_unsafe_writes_do_not_hide_other_errors(tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_text("old")
    _rename_blocked(monkeypatch, errno.ENOSPC)
    with pytest.raises(OSError) as raised:
        netfile.write_file(str(path), b"new", 0o644, None, None, unsafe_writes=True)
    assert raised.value.errno == errno.ENOSPC and path.read_text() == "old"


def test_a_list_without_plugins_needs_drop_in_files_libcni_can_load(tmp_path):
    conf = {"cniVersion": "1.0.0", "name": "web"}
    own = str(tmp_path / "10-web.conflist")
    report = netfile.validate_on_host(conf, own, str(tmp_path), ValidationReport())
    assert [f.path for f in report.errors] == ["plugins"]
    assert str(tmp_path / "web") in report.errors[0].message

    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "10-lo.conf").write_text(json.dumps(LOOPBACK[0]))
    report = netfile.validate_on_host(conf, own, str(tmp_path), ValidationReport())
    assert report.errors == [] and [f.path for f in report.warnings] == ["plugins"]
