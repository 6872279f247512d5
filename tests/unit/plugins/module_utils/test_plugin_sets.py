# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Several plugin sets in one directory: the reference release beside flannel's release layout
(around the flannel stand-in of tests/utils/flannel_standin.py, not flannel itself), a site's own binaries, and binaries of
another installer, each set installed, upgraded and removed without touching the others."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from pathlib import Path

import flannel_standin
import pytest
import release_server

from ansible_collections.cnikit.cni.plugins.module_utils import _manifest
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ReleaseError
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._install import Options, ensure

DISTRO = release_server.PLUGIN_SOURCE
DISTRO_PLUGINS = sorted(os.listdir(DISTRO))
ARCH = "amd64"
V1, V2 = "1.1.1", "1.1.2"
FLANNEL_V1, FLANNEL_V2 = "v1.9.1-flannel1", "v1.9.2-flannel1"

pytestmark = pytest.mark.skipif(not DISTRO_PLUGINS, reason="needs the distro's CNI plugins in /usr/lib/cni")


@pytest.fixture
def dest(tmp_path):
    return str(tmp_path / "bin")


def fetch(url):
    return urllib.request.urlopen(url, timeout=10)  # noqa: S310 - 127.0.0.1 only


def run(server, dest, tmp_path, check_mode=False, **overrides):
    options = {"dest": dest, "version": V1, "arch": ARCH, "base_url": server["base_url"]} | overrides
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return ensure(Options(**options), fetch, str(work), check_mode)


def run_flannel(server, dest, tmp_path, version=FLANNEL_V1, check_mode=False, **overrides):
    tarball = server["flannel"].get(version, server["flannel"][FLANNEL_V1])
    options = {"plugin_set": "flannel", "version": version, "src": str(tarball),
               "rename": {f"flannel-{ARCH}": "flannel"}} | overrides
    return run(server, dest, tmp_path, check_mode=check_mode, **options)


def contents(dest) -> dict:
    return {name: Path(dest, name).read_bytes() for name in sorted(os.listdir(dest))
            if not name.startswith(".")}


def manifest(dest) -> dict:
    return json.loads(Path(dest, ".cnikit-manifest.json").read_text())


def test_a_second_set_leaves_the_reference_set_alone(server, dest, tmp_path):
    run(server, dest, tmp_path)
    reference = contents(dest)
    checked = run_flannel(server, dest, tmp_path, check_mode=True)
    assert contents(dest) == reference
    result = run_flannel(server, dest, tmp_path)
    for outcome in (checked, result):
        assert outcome["changed"] and outcome["installed"] == ["flannel"]
        assert outcome["removed"] == outcome["updated"] == outcome["foreign"] == []
        assert outcome["set"] == "flannel" and outcome["version"] == FLANNEL_V1
    assert result["plugins"]["flannel"]["cni_versions"] == list(flannel_standin.SUPPORTED_VERSIONS)
    assert contents(dest) == reference | {"flannel": release_server.stand_in_flannel_program(FLANNEL_V1)}
    sets = manifest(dest)["sets"]
    assert sorted(sets) == ["flannel", "reference"]
    assert sets["flannel"]["files"].keys() == {"flannel"} and sets["flannel"]["rename"] == {"flannel-amd64": "flannel"}
    assert sorted(sets["reference"]["files"]) == DISTRO_PLUGINS and sets["reference"]["version"] == V1
    assert result["diff"]["before"]["sets"].keys() == {"reference"}
    assert result["diff"]["after"]["sets"]["flannel"] == {"version": FLANNEL_V1, "source": str(server["flannel"][FLANNEL_V1]),
                                                          "files": ["flannel"]}
    # Each set is converged on its own.
    assert not run_flannel(server, dest, tmp_path)["changed"]
    assert not run(server, dest, tmp_path)["changed"]


def test_upgrading_one_set_leaves_the_other_alone(server, dest, tmp_path):
    run(server, dest, tmp_path)
    run_flannel(server, dest, tmp_path)
    flannel = Path(dest, "flannel").read_bytes()
    upgrade = run(server, dest, tmp_path, version=V2)
    assert upgrade["removed"] == ["sbr"] and "flannel" not in upgrade["updated"]
    assert Path(dest, "flannel").read_bytes() == flannel
    reference = contents(dest)
    flannel_upgrade = run_flannel(server, dest, tmp_path, version=FLANNEL_V2)
    assert flannel_upgrade["updated"] == ["flannel"] and flannel_upgrade["removed"] == []
    assert contents(dest) == reference | {"flannel": Path(dest, "flannel").read_bytes()}
    assert FLANNEL_V2.encode() in Path(dest, "flannel").read_bytes()
    assert manifest(dest)["sets"]["reference"]["version"] == V2


def test_removing_one_set_leaves_the_other_alone(server, dest, tmp_path):
    run(server, dest, tmp_path)
    run_flannel(server, dest, tmp_path)
    checked = run(server, dest, tmp_path, check_mode=True, state="absent", plugin_set="flannel")
    assert checked["changed"] and checked["removed"] == ["flannel"] and os.path.exists(os.path.join(dest, "flannel"))
    removed = run(server, dest, tmp_path, state="absent", plugin_set="flannel")
    assert removed["removed"] == ["flannel"] and removed["plugins"] == {}
    assert sorted(contents(dest)) == DISTRO_PLUGINS
    assert list(manifest(dest)["sets"]) == ["reference"]
    assert not run(server, dest, tmp_path, state="absent", plugin_set="flannel")["changed"]
    run_flannel(server, dest, tmp_path)
    run(server, dest, tmp_path, state="absent")
    assert sorted(contents(dest)) == ["flannel"] and list(manifest(dest)["sets"]) == ["flannel"]


def test_binaries_of_another_installer_are_left_alone_and_reported(server, dest, tmp_path):
    os.makedirs(dest)
    calico = Path(dest, "calico")
    calico.write_bytes(b"#!/bin/sh\n# another installer's binary\n")
    calico.chmod(0o755)
    Path(dest, "notes.txt").write_text("not a binary\n")
    for step in ({}, {"version": V2}, {"plugin_set": "flannel"}, {"state": "absent"}):
        if step.get("plugin_set"):
            result = run_flannel(server, dest, tmp_path)
        else:
            result = run(server, dest, tmp_path, **step)
        assert result["foreign"] == ["calico"]
        assert calico.read_bytes() == b"#!/bin/sh\n# another installer's binary\n"
    assert sorted(contents(dest)) == ["calico", "flannel", "notes.txt"]


def test_a_binary_claimed_by_two_sets_is_an_error_that_changes_nothing(server, dest, tmp_path):
    run(server, dest, tmp_path)
    run_flannel(server, dest, tmp_path)
    before = {name: Path(dest, name).read_bytes() for name in os.listdir(dest)}
    site = tmp_path / "site"
    site.mkdir()
    for name in ("bridge", "flannel", "site-tool"):
        Path(site, name).write_text(f"#!/bin/sh\n# the site's {name}\n")
        Path(site, name).chmod(0o755)
    for check_mode in (True, False):
        with pytest.raises(ConfigError) as info:
            run(server, dest, tmp_path, check_mode=check_mode, plugin_set="site", src_dir=str(site), version="2024.1")
        message = str(info.value)
        assert message.startswith("plugin_set: ")
        assert "bridge is already installed by set reference" in message
        assert "flannel is already installed by set flannel" in message and "set site" in message
    assert {name: Path(dest, name).read_bytes() for name in os.listdir(dest)} == before
    # A member renamed onto another set's binary clashes the same way.
    with pytest.raises(ConfigError, match="portmap is already installed by set reference"):
        run_flannel(server, dest, tmp_path, rename={f"flannel-{ARCH}": "portmap"}, plugin_set="flannel")
    assert {name: Path(dest, name).read_bytes() for name in os.listdir(dest)} == before


def old_format_manifest(dest) -> dict:
    """What cni_plugin_install wrote before plugin sets (format 1), for the binaries in dest."""
    current = manifest(dest)["sets"]["reference"]
    return {"format": 1, "version": current["version"], "source": current["source"], "tarball": current["tarball"],
            "plugins": current["plugins"], "files": current["files"]}


def test_an_old_manifest_is_migrated_on_the_first_run(server, dest, tmp_path):
    run(server, dest, tmp_path)
    old = old_format_manifest(dest)
    Path(dest, ".cnikit-manifest.json").write_text(json.dumps(old))
    before = contents(dest)
    checked = run(server, dest, tmp_path, check_mode=True)
    assert json.loads(Path(dest, ".cnikit-manifest.json").read_text()) == old
    result = run(server, dest, tmp_path)
    for outcome in (checked, result):
        assert outcome["changed"] and not outcome["downloaded"]
        assert outcome["installed"] == outcome["updated"] == outcome["removed"] == []
        assert outcome["diff"]["before"] == {"format": 1, "sets": {"reference": {
            "version": V1, "source": old["source"], "files": DISTRO_PLUGINS}}}
        assert outcome["diff"]["after"]["format"] == 2
    assert manifest(dest) == {"format": 2, "sets": {"reference": {k: v for k, v in old.items() if k != "format"}}}
    assert contents(dest) == before
    assert not run(server, dest, tmp_path)["changed"]


def test_an_old_manifest_is_migrated_when_another_set_is_installed(server, dest, tmp_path):
    run(server, dest, tmp_path)
    Path(dest, ".cnikit-manifest.json").write_text(json.dumps(old_format_manifest(dest)))
    result = run_flannel(server, dest, tmp_path)
    assert result["installed"] == ["flannel"] and result["removed"] == []
    assert sorted(contents(dest)) == sorted(DISTRO_PLUGINS + ["flannel"])
    assert sorted(manifest(dest)["sets"]) == ["flannel", "reference"]


def test_flannel_from_its_release_url(server, dest, tmp_path):
    tarball = server["flannel"][FLANNEL_V1]
    url = f"{server['base_url']}/flannel/{FLANNEL_V1}/{tarball.name}"
    digest = "sha256:" + hashlib.sha256(tarball.read_bytes()).hexdigest()
    result = run(server, dest, tmp_path, plugin_set="flannel", version=FLANNEL_V1, url=url, checksum=digest,
                 rename={f"flannel-{ARCH}": "flannel"})
    assert result["installed"] == ["flannel"] and result["downloaded"] and result["source"] == url
    assert not run(server, dest, tmp_path, plugin_set="flannel", version=FLANNEL_V1, url=url, checksum=digest,
                   rename={f"flannel-{ARCH}": "flannel"})["downloaded"]


def test_a_set_version_is_any_sane_string(server, dest, tmp_path):
    assert run_flannel(server, dest, tmp_path, version="0.1")["version"] == "0.1"


@pytest.mark.parametrize(("option", "value", "message"), [
    ("version", "", "must not be empty"),
    ("version", "1.0/../../etc", "must not contain"),
    ("version", "v1\nforged", "must not contain"),
    ("version", " v1", "must not start or end with white space"),
    ("plugin_set", "Flannel set", "must be a name such as reference or flannel"),
    ("plugin_set", "../x", "must be a name such as reference or flannel"),
    ("rename", {"flannel-arm64": "flannel"}, "not in"),
    ("rename", {f"flannel-{ARCH}": "../flannel"}, "must map member names to plugin binary names"),
])
def test_bad_input_names_the_option_and_changes_nothing(server, dest, tmp_path, option, value, message):
    with pytest.raises(ConfigError, match=f"^{option}: .*{message}"):
        run_flannel(server, dest, tmp_path, **{option: value})
    assert not os.path.exists(dest)


def test_two_members_renamed_onto_one_name(server, dest, tmp_path):
    with pytest.raises(ConfigError, match="^rename: .*bridge.*more than one"):
        run(server, dest, tmp_path, rename={"macvlan": "bridge"})


def test_the_reference_set_keeps_release_versions(server, dest, tmp_path):
    with pytest.raises(ConfigError, match="^version: must be a release version"):
        run(server, dest, tmp_path, version="0.1")


def test_another_set_needs_its_own_source(server, dest, tmp_path):
    with pytest.raises(ConfigError, match="^plugin_set: set flannel needs url, src or src_dir: base_url has the layout of the reference release"):
        run(server, dest, tmp_path, plugin_set="flannel", version=FLANNEL_V1)


@pytest.mark.parametrize(("sets", "message"), [
    ([], "is not a format 2 cnikit manifest"),
    ({"Bad Name": {"files": {}}}, "has a set name that is not a set name"),
    ({"a": {"files": {"bridge": "ab"}}, "b": {"files": {"bridge": "cd"}}}, "lists bridge in two sets, a and b"),
])
def test_a_broken_manifest_is_reported_and_changes_nothing(server, dest, tmp_path, sets, message):
    os.makedirs(dest)
    Path(dest, ".cnikit-manifest.json").write_text(json.dumps({"format": 2, "sets": sets}))
    with pytest.raises(ReleaseError, match=message):
        run(server, dest, tmp_path)
    assert os.listdir(dest) == [".cnikit-manifest.json"]


# --- binaries no set installed (another installer's) that a set ships a member of the name of ---

def hand_dropped(dest, name) -> Path:
    """A binary of another installer (Calico's bridge, a hand-copied build), which no set lists."""
    os.makedirs(dest, exist_ok=True)
    path = Path(dest, name)
    path.write_text(f"#!/bin/sh\n# another installer's {name}\n")
    path.chmod(0o755)
    return path


def everything(dest) -> dict:
    """Every entry of dest, hidden ones too, with its content."""
    return {name: Path(dest, name).read_bytes() for name in sorted(os.listdir(dest))}


SOURCES = {
    "release": lambda server: {},
    "tarball": lambda server: {"version": None, "src": str(server["root"] / f"v{V1}" / f"cni-plugins-linux-{ARCH}-v{V1}.tgz")},
    "src_dir": lambda server: {"version": None, "src_dir": DISTRO},
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_binary_no_set_installed_is_never_overwritten_by_a_member_of_its_name(server, dest, tmp_path, source):
    hand_dropped(dest, "bridge")
    hand_dropped(dest, "portmap")
    before = everything(dest)
    for check_mode in (True, False):
        with pytest.raises(ConfigError) as info:
            run(server, dest, tmp_path, check_mode=check_mode, **SOURCES[source](server))
        message = str(info.value)
        assert message.startswith(f"adopt_foreign: {dest}/bridge, {dest}/portmap were not installed by any plugin set")
        assert "set reference would overwrite them" in message and "adopt_foreign: [bridge, portmap]" in message
        assert info.value.value == ["bridge", "portmap"]
    assert everything(dest) == before


def test_another_sets_member_never_overwrites_a_binary_no_set_installed(server, dest, tmp_path):
    run(server, dest, tmp_path)
    hand_dropped(dest, "flannel")
    before = everything(dest)
    with pytest.raises(ConfigError, match=f"^adopt_foreign: {dest}/flannel was not installed by any plugin set.* "
                                          "set flannel would overwrite it"):
        run_flannel(server, dest, tmp_path)
    assert everything(dest) == before


def test_adopted_binaries_are_the_sets_own(server, dest, tmp_path):
    foreign = hand_dropped(dest, "bridge")
    hand_dropped(dest, "portmap")
    # Naming one of two takes over neither: the task still fails, naming the other.
    with pytest.raises(ConfigError, match=f"^adopt_foreign: {dest}/portmap was not installed") as info:
        run(server, dest, tmp_path, adopt_foreign=("bridge",))
    assert info.value.value == ["portmap"] and b"another installer" in foreign.read_bytes()
    checked = run(server, dest, tmp_path, check_mode=True, adopt_foreign=("bridge", "portmap"))
    assert b"another installer" in foreign.read_bytes()
    result = run(server, dest, tmp_path, adopt_foreign=("portmap", "bridge"))
    for outcome in (checked, result):
        assert outcome["adopted"] == ["bridge", "portmap"] and outcome["updated"] == ["bridge", "portmap"]
        assert outcome["installed"] == [name for name in DISTRO_PLUGINS if name not in ("bridge", "portmap")]
        assert outcome["foreign"] == []
    assert foreign.read_bytes().endswith(b"v1")
    assert "bridge" in manifest(dest)["sets"]["reference"]["files"]
    # Converged: the task keeps its adopt_foreign, which names the set's own binaries now.
    again = run(server, dest, tmp_path, adopt_foreign=("bridge", "portmap"))
    assert not again["changed"] and again["adopted"] == []
    # Taken over, they go with the set.
    assert "bridge" in run(server, dest, tmp_path, state="absent")["removed"]
    assert not foreign.exists()


def test_adopt_foreign_names_only_binaries_the_set_installs(server, dest, tmp_path):
    with pytest.raises(ConfigError, match="^adopt_foreign: .*not binaries set flannel installs") as info:
        run_flannel(server, dest, tmp_path, adopt_foreign=("bridge",))
    assert info.value.value == ["bridge"]
    with pytest.raises(ConfigError, match="^adopt_foreign: entries must be plugin binary names"):
        run(server, dest, tmp_path, adopt_foreign=("../bridge",))
    assert not os.path.exists(dest)
    # A converged run, which reads no source, holds the names to the set's binaries just the same.
    run(server, dest, tmp_path)
    with pytest.raises(ConfigError, match="^adopt_foreign: names flannel, which are not binaries set reference installs"):
        run(server, dest, tmp_path, adopt_foreign=("flannel",))


# --- the reference set is the reference plugins' release -----------------------------------------

def test_flannel_without_a_set_of_its_own_leaves_the_reference_set_alone(server, dest, tmp_path):
    """The task of the report: flannel's tarball, its version, no plugin_set."""
    run(server, dest, tmp_path)
    before = everything(dest)
    tarball = str(server["flannel"][FLANNEL_V1])
    rename = {f"flannel-{ARCH}": "flannel"}
    for check_mode in (True, False):
        with pytest.raises(ConfigError, match="^version: must be a release version of the reference plugins .*"
                                              "plugin_set") as info:
            run(server, dest, tmp_path, check_mode=check_mode, version=FLANNEL_V1, src=tarball, rename=rename)
        assert info.value.value == FLANNEL_V1
        with pytest.raises(ConfigError, match="^plugin_set: flannel is not a reference plugin .*a set of its own, "
                                              "such as plugin_set: flannel"):
            run(server, dest, tmp_path, check_mode=check_mode, version=None, src=tarball, rename=rename)
    assert everything(dest) == before


def test_a_partial_source_cannot_silently_shrink_the_reference_set(server, dest, tmp_path):
    run(server, dest, tmp_path)
    before = everything(dest)
    site = tmp_path / "site"
    site.mkdir()
    Path(site, "bridge").write_bytes(Path(DISTRO, "bridge").read_bytes() + b"patched")
    Path(site, "bridge").chmod(0o755)
    others = ", ".join(name for name in DISTRO_PLUGINS if name != "bridge")
    for check_mode in (True, False):
        with pytest.raises(ConfigError, match=f"^plugin_set: {site} holds no {others}, which set reference holds: "
                                              ".*plugin_set") as info:
            run(server, dest, tmp_path, check_mode=check_mode, version=None, src_dir=str(site))
        assert info.value.value == "reference"
    assert everything(dest) == before
    # Named, the removal is the operator's: plugins selects the set, a release version says what it is.
    assert run(server, dest, tmp_path, version=None, src_dir=str(site), plugins=("bridge",))["removed"] == \
        [name for name in DISTRO_PLUGINS if name != "bridge"]


@pytest.mark.parametrize("version", ["1.9.1-rc.1", "v1.1.1+ds1", FLANNEL_V1])
def test_the_reference_set_takes_only_release_versions(server, dest, tmp_path, version):
    with pytest.raises(ConfigError, match="^version: must be a release version of the reference plugins such as "
                                          "1.9.1 or v1.9.1; .*plugin_set"):
        run(server, dest, tmp_path, version=version, src_dir=DISTRO)
    assert not os.path.exists(dest)


def test_binaries_of_a_run_that_failed_among_the_renames_stay_the_sets(server, dest, tmp_path, monkeypatch):
    """The manifest claims a first install's binaries before they land: the next run repairs the
    install instead of refusing them as another installer's."""
    os.makedirs(dest)
    real_replace = os.replace
    landed = []

    def replace_then_fail(source, target, **fds):
        if _manifest.STAGE_PREFIX not in str(source):  # the manifest's own atomic write
            return real_replace(source, target, **fds)
        if landed:
            raise OSError(28, "No space left on device")
        real_replace(source, target)
        landed.append(os.path.basename(target))
        return None

    monkeypatch.setattr(_manifest.os, "replace", replace_then_fail)
    with pytest.raises(ReleaseError, match="No space left on device"):
        run(server, dest, tmp_path)
    monkeypatch.undo()
    assert landed == [DISTRO_PLUGINS[0]] and os.path.exists(os.path.join(dest, landed[0]))
    assert manifest(dest)["sets"]["reference"].get("version") is None
    repaired = run(server, dest, tmp_path)
    assert repaired["installed"] == DISTRO_PLUGINS[1:] and repaired["updated"] == [] and repaired["adopted"] == []
    assert not run(server, dest, tmp_path)["changed"]
