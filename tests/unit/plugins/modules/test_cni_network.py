# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_network as Ansible runs it: arguments in, JSON out, files on disk (no plugin binaries)."""

from __future__ import annotations

import json
import os
import platform

import pytest
from module_harness import patch_module_args

from ansible_collections.cnikit.cni.plugins.modules import cni_network

PLUGINS = [{"type": "bridge", "bridge": "cnit-v-u0", "ipam": {"type": "host-local", "subnet": "10.251.20.0/24"}}]


def run(capsys, check_mode=False, diff=False, **args):
    args.setdefault("check_plugins", False)
    args["_ansible_check_mode"] = check_mode
    args["_ansible_diff"] = diff
    with patch_module_args(args), pytest.raises(SystemExit):
        cni_network.main()
    return json.loads(capsys.readouterr().out)


def listing(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))} if directory.exists() else {}


def test_check_mode_writes_nothing(tmp_path, capsys):
    result = run(capsys, check_mode=True, diff=True, name="web", plugins=PLUGINS, conf_dir=str(tmp_path / "d"))
    assert result["changed"] and result["diff"]["before"] == "" and '"name": "web"' in result["diff"]["after"]
    assert not (tmp_path / "d").exists()


def test_write_then_unchanged(tmp_path, capsys):
    first = run(capsys, name="web", plugins=PLUGINS, conf_dir=str(tmp_path))
    second = run(capsys, name="web", plugins=PLUGINS, conf_dir=str(tmp_path))
    assert first["changed"] and not second["changed"]
    assert first["path"] == str(tmp_path / "10-web.conflist")
    assert json.loads((tmp_path / "10-web.conflist").read_text()) == first["config"]


def test_strict_failure_touches_nothing(tmp_path, capsys):
    run(capsys, name="web", plugins=PLUGINS, conf_dir=str(tmp_path))
    before = listing(tmp_path)
    result = run(capsys, name="web", plugins=[{"type": "bridge", "vlan": 5000}], conf_dir=str(tmp_path))
    assert result["failed"]
    assert result["validation_errors"] == [{"path": "plugins[0].vlan", "message": "must be at most 4094", "value": 5000}]
    assert "plugins[0].vlan: must be at most 4094 (got 5000)" in result["msg"]
    assert listing(tmp_path) == before


def test_warn_mode_writes_and_reports(tmp_path, capsys):
    result = run(capsys, name="web", plugins=[{"type": "bridge", "vlan": 5000}], conf_dir=str(tmp_path), validate="warn")
    assert result["changed"] and [e["path"] for e in result["validation_errors"]] == ["plugins[0].vlan"]
    assert any("invalid, written anyway (validate=warn): plugins[0].vlan" in json.dumps(w) for w in result["warnings"])
    assert (tmp_path / "10-web.conflist").exists()


def test_validate_only_in_warn_mode_says_nothing_is_written(tmp_path, capsys):
    result = run(capsys, name="web", plugins=[{"type": "bridge", "vlan": 5000}], conf_dir=str(tmp_path),
                 validate="warn", validate_only=True)
    assert not result["changed"] and listing(tmp_path) == {}
    assert any("invalid, reported only (validate=warn): plugins[0].vlan" in json.dumps(w) for w in result["warnings"])


def test_validate_only(tmp_path, capsys):
    result = run(capsys, name="web", config='{"cniVersion": "1.0.0", "plugins": [{"type": "loopback", "mtu": 1}]}',
                 conf_dir=str(tmp_path), validate_only=True)
    assert not result["changed"] and result["config"]["name"] == "web"
    assert [w["path"] for w in result["validation_warnings"]] == ["plugins[0].mtu"]
    assert listing(tmp_path) == {}


def test_bad_name_is_refused_before_any_path_is_built(tmp_path, capsys):
    result = run(capsys, name="../etc", state="absent", conf_dir=str(tmp_path))
    assert result["failed"] and result["error"]["path"] == "name"


def test_absent_removes_every_file_of_the_name(tmp_path, capsys):
    run(capsys, name="web", plugins=PLUGINS, conf_dir=str(tmp_path))
    (tmp_path / "50-copy.conflist").write_text(json.dumps({"cniVersion": "1.0.0", "name": "web", "plugins": [{"type": "loopback"}]}))
    (tmp_path / "60-other.conflist").write_text(json.dumps({"cniVersion": "1.0.0", "name": "other", "plugins": [{"type": "loopback"}]}))
    result = run(capsys, name="web", state="absent", conf_dir=str(tmp_path), backup=True)
    again = run(capsys, name="web", state="absent", conf_dir=str(tmp_path))
    assert result["changed"] and len(result["backup_files"]) == 2
    assert result["removed"] == [str(tmp_path / "10-web.conflist"), str(tmp_path / "50-copy.conflist")]
    assert not again["changed"]
    assert sorted(n for n in os.listdir(tmp_path) if not n.endswith("~")) == ["60-other.conflist"]


def test_plugins_and_config_are_exclusive(tmp_path, capsys):
    result = run(capsys, name="web", plugins=PLUGINS, config={"plugins": PLUGINS}, conf_dir=str(tmp_path))
    assert result["failed"] and "mutually exclusive" in result["msg"]


def test_check_mode_predicts_over_plugins_not_installed_yet(tmp_path, capsys):
    """A --check run before the plugins' install task has installed anything (issue 14)."""
    (tmp_path / "bin").mkdir()
    result = run(capsys, check_mode=True, check_plugins=True, name="web", plugins=PLUGINS,
                 conf_dir=str(tmp_path / "d"), cni_path=[str(tmp_path / "bin")])
    assert result["changed"] and not result.get("failed")
    assert "network web: check mode: plugins bridge, host-local are not in" in str(result["warnings"])


def test_warnings_name_the_host_and_the_network(tmp_path, capsys):
    """A fleet's warnings are merged by text: each must still say where it comes from (issue 23)."""
    result = run(capsys, name="web", plugins=[{"type": "bridge", "vlan": 5000, "ipam": PLUGINS[0]["ipam"]}],
                 validate="warn", check_plugins=False, conf_dir=str(tmp_path / "d"))
    assert f"{platform.node()}: network web: invalid, written anyway (validate=warn): plugins[0].vlan" \
        in str(result["warnings"])


def test_check_mode_still_checks_the_binaries_that_are_there(tmp_path, capsys):
    result = run(capsys, check_mode=True, check_plugins=True, name="web", cni_version="9.9.9", plugins=PLUGINS,
                 conf_dir=str(tmp_path / "d"), cni_path=["/usr/lib/cni"])
    assert result["failed"] and "cniVersion" in result["msg"]


def test_a_missing_plugin_fails_a_real_run(tmp_path, capsys):
    (tmp_path / "bin").mkdir()
    result = run(capsys, check_plugins=True, name="web", plugins=PLUGINS,
                 conf_dir=str(tmp_path / "d"), cni_path=[str(tmp_path / "bin")])
    assert result["failed"] and 'failed to find plugin "bridge"' in result["msg"]
    assert not (tmp_path / "d").exists()


HARD_WAY_BRIDGE = {"cniVersion": "1.0.0", "name": "bridge", "type": "bridge", "bridge": "cnit-v-u1",
                   "isGateway": True, "ipMasq": True,
                   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.200.0.0/24"}]],
                            "routes": [{"dst": "0.0.0.0/0"}]}}


@pytest.mark.parametrize("as_text", [False, True], ids=["mapping", "text"])
def test_a_single_plugin_conf_is_written_as_the_list_libcni_loads_it_as(tmp_path, capsys, as_text):
    """Kubernetes The Hard Way's 10-bridge.conf given as it is (issue 28): written as a one-plugin
    conflist, and the result, the warnings and the diff say so; a re-run is unchanged."""
    config = json.dumps(HARD_WAY_BRIDGE) if as_text else HARD_WAY_BRIDGE
    first = run(capsys, diff=True, name="bridge", config=config, conf_dir=str(tmp_path))
    assert first["changed"] and first["converted_from_conf"] and not first.get("failed"), first
    assert json.loads((tmp_path / "10-bridge.conflist").read_text()) == {
        "cniVersion": "1.0.0", "name": "bridge", "plugins": [HARD_WAY_BRIDGE]}
    assert "converted from a single-plugin .conf" in first["diff"]["after_header"]
    assert "config is a single-plugin network (a .conf)" in str(first["warnings"])
    again = run(capsys, name="bridge", config=config, conf_dir=str(tmp_path))
    assert not again["changed"] and again["converted_from_conf"]


def test_a_list_is_not_reported_as_converted(tmp_path, capsys):
    result = run(capsys, name="web", plugins=PLUGINS, conf_dir=str(tmp_path))
    assert result["converted_from_conf"] is False
