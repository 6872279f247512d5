# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The module processes killed with SIGKILL at random points of ADD, DEL and install: the next
run converges to exactly the declared state, nothing is leaked, and no file (cache, conflist,
manifest, binary) is ever left truncated.

Each iteration runs the real modules (cni_network then cni_attach, or cni_plugin_install) as
Ansible runs them on a host, kills the process group after a random delay, waits for the
plugins the kill orphaned, checks every file parses, runs the modules again to completion and
checks the declared state exactly. The chain is bridge + host-local, the test double sleeping
(so a kill lands mid-ADD or mid-DEL often), tuning and portmap. Every iteration changes the
network (tuning's MTU alternates) or the release (two versions alternate), so the killed run
always has work to do: replacement of an attachment, rewrite of a conflist, replacement of
binaries."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import tarfile
import time

import modules
import pytest
from conftest import PREFIX, addresses_in, count, link_names, valid_cache_files
from fakeplugin import FakePlugins
from release_server import build_release

from ansible_collections.cnikit.cni.plugins.module_utils import _manifest, _manifest_file
from ansible_collections.cnikit.cni.plugins.module_utils._binaries import MEMO_NAME

KILLS = count(12, 50)
SEED = int(os.environ.get("CNIKIT_RELIABILITY_SEED", "20261121"))
MTUS = (1400, 1420)


class Scenario:
    """One network, one namespace, the declared attachment, and checks of the host."""

    def __init__(self, host, tmp_path):
        self.host = host
        self.work = str(tmp_path / "moduletmp")
        self.subnet_prefix = f"10.247.{host.index}."
        self.network = f"{PREFIX}kill{host.index}"
        self.netns = host.netns(f"k{host.index}")
        self.container_id = f"{PREFIX}cid{host.index}"
        self.fakes = FakePlugins(host.fake_dir)
        self.fakes.install("sleep", ADD={"sleep": 0.3}, DEL={"sleep": 0.2})
        self.port = 21000 + host.index

    def plugins(self, mtu: int) -> list:
        return [{"type": "sleep"}, {"type": "tuning", "mtu": mtu},
                {"type": "portmap", "capabilities": {"portMappings": True}, "snat": False}]

    def conflist(self, mtu: int) -> dict:
        return self.host.conflist(self.network, self.plugins(mtu), subnet=self.subnet_prefix + "0/24")

    def paths(self) -> dict:
        return {"cni_path": self.host.cni_path, "conf_dir": self.host.conf_dir, "timeout": 20}

    def network_args(self, mtu: int) -> dict:
        conf = self.conflist(mtu)
        return dict(self.paths(), name=self.network, plugins=conf["plugins"], cni_version="1.0.0",
                    check_plugins=False)

    def attach_args(self, state: str) -> dict:
        return dict(self.paths(), cache_dir=self.host.cache_dir, network=self.network, netns=self.netns,
                    container_id=self.container_id, state=state,
                    capability_args={"portMappings": [{"hostPort": self.port, "containerPort": 80, "protocol": "tcp"}]})

    def converge(self, mtu: int, state: str = "present") -> dict:
        if state == "present":
            result = modules.run("cni_network", self.network_args(mtu), self.work)
            assert not result.get("failed"), result.get("msg")
        result = modules.run("cni_attach", self.attach_args(state), self.work)
        assert not result.get("failed"), result.get("msg")
        return result

    def timed_converge(self, mtu: int) -> tuple:
        """Converge to ``mtu`` and return how long each module took."""
        started = time.monotonic()
        assert not modules.run("cni_network", self.network_args(mtu), self.work).get("failed")
        network_done = time.monotonic()
        assert not modules.run("cni_attach", self.attach_args("present"), self.work).get("failed")
        return network_done - started, time.monotonic() - network_done

    def conflist_path(self) -> str:
        [name] = [n for n in os.listdir(self.host.conf_dir) if n.endswith(".conflist")]
        return os.path.join(self.host.conf_dir, name)

    def files_parse(self) -> None:
        """Every file the modules write is whole: conflists and cache entries parse."""
        for name in os.listdir(self.host.conf_dir):
            path = os.path.join(self.host.conf_dir, name)
            if name.endswith(".conflist"):
                with open(path, encoding="utf-8") as handle:
                    json.load(handle)
        valid_cache_files(self.host.cache_dir)

    def leftovers(self) -> list:
        """Temporary files a killed atomic write left beside its target."""
        dirs = [self.host.conf_dir, os.path.join(self.host.cache_dir, "results")]
        return [os.path.join(d, n) for d in dirs if os.path.isdir(d) for n in os.listdir(d) if n.startswith(".")]

    def assert_attached(self, mtu: int) -> None:
        """Exactly the declared state: one eth0 with one address of the subnet, reserved once for
        this container, one veth on the bridge, one portmap chain, one valid cache entry made
        with the declared configuration, no intent marker, the conflist as declared."""
        with open(self.conflist_path(), encoding="utf-8") as handle:
            assert json.load(handle)["plugins"] == self.conflist(mtu)["plugins"]
        assert link_names(os.path.basename(self.netns)) == ["lo", "eth0"]
        [address] = addresses_in(self.netns)
        assert address.startswith(self.subnet_prefix)
        ip = address.split("/")[0]
        assert self.host.reservations(self.network) == {ip: self.container_id}
        state = self.host.state(self.network, [self.container_id])
        assert len(state["veths"]) == 1, state
        assert len([line for line in state["nat"] if line.startswith("CNI-DN-")]) == 1, state
        assert len([line for line in state["nat"] if line.startswith("-A CNI-HOSTPORT-DNAT")]) == 1, state
        assert state["pending"] == [], state
        [entry] = valid_cache_files(self.host.cache_dir)
        assert json.loads(entry.config)["plugins"] == self.conflist(mtu)["plugins"]
        assert [i["address"] for i in entry.result["ips"]] == [address]
        assert self.leftovers() == []


def where(scenario: Scenario, calls_before: int) -> str:
    """Where a kill of cni_attach landed, from the test double's log and what was left."""
    verbs = [call["verb"] for call in scenario.fakes.calls()[calls_before:]]
    state = scenario.host.state(scenario.network, [scenario.container_id])
    if "ADD" in verbs:
        return "during ADD (intent marker left)" if state["pending"] else "after ADD (cache written)"
    if "DEL" in verbs:
        return "during DEL, after the test double (cache kept)" if state["cache"] else "after DEL (cache removed)"
    return "before the test double ran (start-up, loading, first plugins)"


@pytest.fixture
def rng():
    return random.Random(SEED)


def test_kill_during_add_converges_exactly(host, tmp_path, rng, figures):
    scenario = Scenario(host, tmp_path)
    scenario.converge(MTUS[0])
    network_time, attach_time = scenario.timed_converge(MTUS[1])  # a replacement, as each killed run is
    landed = collections.Counter()
    orphans = 0
    for iteration in range(KILLS):
        mtu = MTUS[iteration % 2]
        delay = rng.uniform(0.0, 1.05) * (network_time + attach_time)
        calls_before = len(scenario.fakes.calls())
        if modules.run_killed("cni_network", scenario.network_args(mtu), scenario.work, delay):
            landed["in cni_network"] += 1
        elif modules.run_killed("cni_attach", scenario.attach_args("present"), scenario.work,
                                max(0.0, delay - network_time)):
            landed[f"in cni_attach: {where(scenario, calls_before)}"] += 1
        else:
            landed["after both finished"] += 1
        orphans += modules.wait_for_orphans(scenario.container_id)
        scenario.files_parse()
        scenario.converge(mtu)
        scenario.assert_attached(mtu)
    scenario.converge(MTUS[0], "absent")
    host.assert_clean(scenario.network, [scenario.container_id], [scenario.netns])
    figures(dict(landed, kills=KILLS, orphaned_plugin_processes=orphans))


def test_kill_during_del_converges_exactly(host, tmp_path, rng, figures):
    scenario = Scenario(host, tmp_path)
    scenario.converge(MTUS[0])
    started = time.monotonic()
    scenario.converge(MTUS[0], "absent")
    duration = time.monotonic() - started
    landed = collections.Counter()
    orphans = 0
    for _kill in range(KILLS):
        scenario.converge(MTUS[0])
        calls_before = len(scenario.fakes.calls())
        if modules.run_killed("cni_attach", scenario.attach_args("absent"), scenario.work,
                              rng.uniform(0.3, 1.05) * duration):
            landed[where(scenario, calls_before)] += 1
        else:
            landed["after it finished"] += 1
        orphans += modules.wait_for_orphans(scenario.container_id)
        scenario.files_parse()
        result = scenario.converge(MTUS[0], "absent")
        assert result["action"] in ("deleted", "absent")
        host.assert_clean(scenario.network, [scenario.container_id], [scenario.netns])
        assert scenario.leftovers() == []
    figures(dict(landed, kills=KILLS, orphaned_plugin_processes=orphans))


# -- install ---------------------------------------------------------------------------------

INSTALLED = ["bridge", "host-local", "loopback", "tuning"]


def _members(tarball: str) -> dict:
    with tarfile.open(tarball) as archive:
        return {m.name[2:]: hashlib.sha256(archive.extractfile(m).read()).hexdigest()
                for m in archive if m.isreg() and m.name[2:] in INSTALLED}


def _sha256(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def test_kill_during_install_converges_exactly(tmp_path, rng, figures):
    if os.geteuid() != 0:
        pytest.skip("installs with root ownership")
    releases = {version: build_release(str(tmp_path / "releases"), version, "amd64", INSTALLED,
                                       patch={name: version.encode() for name in INSTALLED})
                for version in ("1.1.1", "1.1.2")}
    digests = {version: _members(path) for version, path in releases.items()}
    dest = str(tmp_path / "opt-cni-bin")
    work = str(tmp_path / "moduletmp")

    def args(version):
        return {"src": releases[version], "version": version, "dest": dest}

    assert not modules.run("cni_plugin_install", args("1.1.1"), work).get("failed")
    started = time.monotonic()
    assert not modules.run("cni_plugin_install", args("1.1.2"), work).get("failed")
    # An upgrade, as each killed run is. Its first ~40% is interpreter start-up: the kills aim after it.
    duration = time.monotonic() - started
    landed = collections.Counter()
    for iteration in range(KILLS):
        version = ("1.1.1", "1.1.2")[iteration % 2]
        killed = modules.run_killed("cni_plugin_install", args(version), work, rng.uniform(0.45, 1.05) * duration)
        manifest = _manifest_file.read_manifest(dest)  # parses, or raises
        binaries = [name for name in os.listdir(dest) if not name.startswith(".")]
        for name in binaries:
            assert _sha256(os.path.join(dest, name)) in (digests["1.1.1"][name], digests["1.1.2"][name]), \
                f"{name} is neither release's binary (truncated?)"
        landed[_install_landing(killed, dest, manifest, version, digests[version])] += 1
        result = modules.run("cni_plugin_install", args(version), work)
        assert not result.get("failed"), result
        assert sorted(os.listdir(dest)) == sorted(INSTALLED + [_manifest_file.MANIFEST_NAME, MEMO_NAME]), "leftovers in dest"
        assert _reference_version(_manifest_file.read_manifest(dest)) == version
        for name in INSTALLED:
            path = os.path.join(dest, name)
            assert _sha256(path) == digests[version][name]
            assert os.stat(path).st_mode & 0o7777 == 0o755
    figures(dict(landed, kills=KILLS))


def _reference_version(manifest: dict | None) -> str | None:
    return _manifest_file.manifest_sets(manifest).get(_manifest_file.REFERENCE_SET, {}).get("version")


def _install_landing(killed: bool, dest: str, manifest: dict, version: str, wanted: dict) -> str:
    if not killed:
        return "after it finished"
    if _reference_version(manifest) == version:
        return "after the manifest was written"
    if any(name.startswith(_manifest.STAGE_PREFIX) for name in os.listdir(dest)):
        return "while staging (stage directory left)"
    if any(_sha256(os.path.join(dest, name)) == digest for name, digest in wanted.items()):
        return "between the renames and the manifest"
    return "before staging (start-up, reading and hashing the tarball)"


# -- an interrupted batch keeps its addresses ------------------------------------------------

def test_interrupted_batch_is_repaired_with_the_addresses_it_had(host, tmp_path):
    """A batched cni_attach killed while its first ADD runs (after host-local reserved the
    address, before the chain finished): the re-run repairs that attachment asking host-local
    for the address it held, and reports it as the previous address beside the one it has now;
    the item the kill kept from starting is added."""
    network = f"{PREFIX}intr{host.index}"
    fakes = FakePlugins(host.fake_dir)
    fakes.install("hang", ADD={"sleep": 8})  # after bridge + host-local: the kill lands here
    host.write_conflist(host.conflist(network, [{"type": "hang"}], subnet=f"10.246.{host.index}.0/24"))
    interrupted, not_started = container_ids = [f"{PREFIX}icid{host.index}-{n}" for n in range(2)]
    netns = host.netns(f"i{host.index}")
    args = {"cni_path": host.cni_path, "conf_dir": host.conf_dir, "cache_dir": host.cache_dir, "timeout": 40,
            "network": network, "netns": netns,
            "attachments": [{"container_id": cid, "ifname": f"eth{n}"} for n, cid in enumerate(container_ids)]}
    work = str(tmp_path / "moduletmp")

    modules.run_killed_when("cni_attach", args, work, lambda: len(fakes.calls("ADD")) == 1)
    modules.wait_for_orphans(interrupted)
    [(held, owner)] = host.reservations(network).items()
    assert owner == interrupted
    assert host.state(network, [interrupted])["pending"]  # the kill left the intent marker

    fakes.configure("hang")  # the next run's ADDs go through
    result = modules.run("cni_attach", args, work)
    assert not result.get("failed"), result.get("msg")
    repaired, added = result["attachments"]
    assert repaired["action"] == "repaired", repaired
    assert repaired["previous_ips"] == [f"{held}/24"], repaired
    assert repaired["ips"] == [f"{held}/24"] and repaired["address_changed"] is False, repaired
    assert added["action"] == "added" and "previous_ips" not in added, added
    assert host.state(network, container_ids)["pending"] == []

    assert not modules.run("cni_attach", dict(args, state="absent"), work).get("failed")
    host.assert_clean(network, container_ids, [netns])
