# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plugin upgrade as an operator does it, with the modules and the real binaries of both
tested releases: attachments made with the oldest release stay healthy after cni_plugin_install
swaps in the newest (CHECK passes, re-runs change nothing, DEL works), and a network bumped to
the newest cniVersion the new binaries speak is replaced keeping its addresses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import releases
from module_harness import run_module

from ansible_collections.cnikit.cni.plugins.modules import cni_attach, cni_info, cni_network, cni_plugin_install

RELEASES = releases.plugin_dirs()
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or len(RELEASES) < 2,
                                reason="needs root and two plugin releases (scripts/test.sh setup)")


def _bridge_versions(directory: str) -> list:
    reply = subprocess.run([f"{directory}/bridge"], env={"CNI_COMMAND": "VERSION"}, capture_output=True, check=True)
    return json.loads(reply.stdout)["supportedVersions"]


def test_attachments_survive_the_upgrade_and_a_cni_version_bump_keeps_addresses(
        tmp_path, capsys, make_netns, bridge_name, subnet):
    (old, old_dir), (new, new_dir) = list(RELEASES.items())[0], list(RELEASES.items())[-1]
    paths = {"cni_path": [str(tmp_path / "bin")], "conf_dir": str(tmp_path / "net.d")}
    attach_paths = dict(paths, cache_dir=str(tmp_path / "cache"))
    plugins = [{"type": "bridge", "bridge": bridge_name,
                "ipam": {"type": "host-local", "subnet": subnet, "dataDir": str(tmp_path / "ipam")}},
               {"type": "tuning", "mtu": 1400}]
    namespaces = [make_netns(), make_netns()]

    def install(release: str, directory: str) -> dict:
        return run_module(cni_plugin_install, capsys, src_dir=directory, version=release, dest=str(tmp_path / "bin"))

    def declare(**options) -> dict:
        return run_module(cni_network, capsys, name="cnit-e-upgrade", plugins=plugins, **paths, **options)

    def attach(**options) -> dict:
        result = run_module(cni_attach, capsys, network="cnit-e-upgrade",
                            attachments=[{"netns": netns} for netns in namespaces], **attach_paths, **options)
        assert not result.get("failed"), result
        return result

    assert install(old, old_dir)["changed"]
    assert declare(cni_version="1.0.0")["changed"]
    before = attach()["attachments"]
    assert [item["action"] for item in before] == ["added", "added"]

    upgraded = install(new, new_dir)
    assert upgraded["changed"] and upgraded["version"] == new

    again = attach()
    assert not again["changed"], again
    assert [item["action"] for item in again["attachments"]] == ["unchanged", "unchanged"]
    assert [item["ips"] for item in again["attachments"]] == [item["ips"] for item in before]

    newest = _bridge_versions(new_dir)[-1]
    assert newest not in _bridge_versions(old_dir), "the newer release speaks no newer cniVersion"
    assert declare(cni_version=newest)["changed"]
    bumped = attach()["attachments"]
    assert [item["action"] for item in bumped] == ["replaced", "replaced"], bumped
    assert [item["ips"] for item in bumped] == [item["ips"] for item in before]
    assert [item["address_changed"] for item in bumped] == [False, False]
    assert [item["result"]["cniVersion"] for item in bumped] == [newest, newest]
    assert [item["action"] for item in attach()["attachments"]] == ["unchanged", "unchanged"]

    removed = attach(state="absent")["attachments"]
    assert [item["action"] for item in removed] == ["deleted", "deleted"]
    assert not [p for p in (tmp_path / "ipam" / "cnit-e-upgrade").iterdir() if p.name[0].isdigit()]
    assert not list(Path(attach_paths["cache_dir"], "results").iterdir())


def test_another_installers_binary_is_refused_then_taken_over_only_when_named(tmp_path, capsys):
    """A shared plugin directory where another installer put the newest release's bridge: the
    oldest release installed over it fails naming it and changes nothing; named in adopt_foreign,
    it is replaced by the real binary of that release, which cni_info then reports."""
    (old, old_dir), (_new, new_dir) = list(RELEASES.items())[0], list(RELEASES.items())[-1]
    dest = tmp_path / "bin"
    dest.mkdir()
    theirs = Path(new_dir, "bridge").read_bytes()
    (dest / "bridge").write_bytes(theirs)
    (dest / "bridge").chmod(0o755)

    def install(check_mode=False, **options) -> dict:
        return run_module(cni_plugin_install, capsys, src_dir=old_dir, version=old, dest=str(dest),
                          _ansible_check_mode=check_mode, **options)

    for check_mode in (True, False):
        refused = install(check_mode)
        assert refused.get("failed") and refused["msg"].startswith(
            f"adopt_foreign: {dest}/bridge was not installed by any plugin set"), refused
    assert sorted(os.listdir(dest)) == ["bridge"] and (dest / "bridge").read_bytes() == theirs

    adopted = install(adopt_foreign=["bridge"])
    assert adopted["adopted"] == ["bridge"] and "bridge" in adopted["updated"]
    assert (dest / "bridge").read_bytes() == Path(old_dir, "bridge").read_bytes()
    assert adopted["plugins"]["bridge"]["cni_versions"] == _bridge_versions(old_dir)
    facts = run_module(cni_info, capsys, gather=["plugins"], cni_path=[str(dest)])
    bridge = next(fact for fact in facts["plugins"] if fact["name"] == "bridge")
    assert (bridge["set"], bridge["release"]) == ("reference", old)
