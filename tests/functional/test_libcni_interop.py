# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Interoperability with the real libcni, each release of tests/utils/releases.py (Debian 12's
golang-github-appc-cni-dev 1.1.2 and Debian testing's 1.3.0): what the engine adds, libcni CHECKs
and DELs through the result cache, and the other way round; with libcni 1.3, its GC and STATUS.
The Go program in libcni_tool/ (built by scripts/lib.sh against each release) makes the same
libcni calls as cnitool."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

import pytest
import releases

from ansible_collections.cnikit.cni.plugins.module_utils._conflist import find_network
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
from ansible_collections.cnikit.cni.plugins.module_utils._exec import PluginExecutor
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import cnitool_container_id

PLUGINS = releases.PLUGIN_DIR
TOOLS = releases.libcni_tools()

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(f"{PLUGINS}/bridge"),
                                reason=f"needs root and the plugin binaries in {PLUGINS}")


@dataclass(frozen=True)
class Libcni:
    """The Go program built against one libcni release."""

    release: str
    tool: str

    @property
    def has_gc_and_status(self) -> bool:
        return _at_least(self.release, "1.2.0")  # libcni 1.2 added GCNetworkList and GetStatusNetworkList

    @property
    def cni_version(self) -> str:
        """The newest cniVersion both this libcni and the plugins speak (libcni 1.1 reads up to 1.0.0,
        the oldest tested plugins too)."""
        return PluginExecutor([PLUGINS], 30).supported_versions("bridge")[-1] if self.has_gc_and_status else "1.0.0"


def _at_least(release: str, minimum: str) -> bool:
    return tuple(map(int, release.split("."))) >= tuple(map(int, minimum.split(".")))


@pytest.fixture(params=list(TOOLS), ids=[f"libcni {release}" for release in TOOLS])
def libcni(request):
    return Libcni(request.param, TOOLS[request.param])


@pytest.fixture
def gc_libcni(libcni):
    """A libcni release with GC and STATUS."""
    if not libcni.has_gc_and_status:
        pytest.skip(f"libcni {libcni.release} has neither GC nor STATUS")
    return libcni


@pytest.fixture
def setup(tmp_path, make_netns, bridge_name, subnet, libcni):
    conf_dir, cache_dir = tmp_path / "net.d", tmp_path / "cache"
    conf_dir.mkdir()
    (conf_dir / "10-interop.conflist").write_text(json.dumps({
        "cniVersion": libcni.cni_version, "name": "cnit-e-interop",
        "plugins": [{"type": "bridge", "bridge": bridge_name,
                     "ipam": {"type": "host-local", "subnet": subnet, "dataDir": str(tmp_path / "ipam")}},
                    {"type": "tuning", "mtu": 1400}]}))
    netns = make_netns()
    engine = Engine([PLUGINS], str(cache_dir), timeout=30)
    attachment = Attachment("cnit-e-interop", cnitool_container_id(netns), netns)
    return engine, find_network(str(conf_dir), "cnit-e-interop"), attachment, conf_dir, tmp_path


def run_libcni(libcni, verb, conf_dir, cache_dir, netns, **extra_env) -> subprocess.CompletedProcess:
    env = dict(os.environ, NETCONFPATH=str(conf_dir), CNI_PATH=PLUGINS, CNI_CACHE_DIR=str(cache_dir), **extra_env)
    return subprocess.run([libcni.tool, verb, "cnit-e-interop", netns], env=env, capture_output=True, text=True,
                          check=False)


def reservations(tmp_path) -> list:
    directory = tmp_path / "ipam" / "cnit-e-interop"
    return sorted(p.name for p in directory.iterdir() if p.name[0].isdigit()) if directory.exists() else []


def test_libcni_reads_checks_and_deletes_what_the_engine_added(libcni, setup):
    engine, network, attachment, conf_dir, tmp_path = setup
    result = engine.add(network, attachment)
    cached = run_libcni(libcni, "cached", conf_dir, engine.cache.directory, attachment.netns)
    assert cached.returncode == 0, cached.stderr
    assert json.loads(cached.stdout)["ips"][0]["address"] == result["ips"][0]["address"]
    check = run_libcni(libcni, "check", conf_dir, engine.cache.directory, attachment.netns)
    assert check.returncode == 0, check.stderr
    delete = run_libcni(libcni, "del", conf_dir, engine.cache.directory, attachment.netns)
    assert delete.returncode == 0, delete.stderr
    assert engine.cache.read(attachment.key) is None
    assert reservations(tmp_path) == []


def test_engine_reads_checks_and_deletes_what_libcni_added(libcni, setup):
    engine, network, attachment, conf_dir, tmp_path = setup
    add = run_libcni(libcni, "add", conf_dir, engine.cache.directory, attachment.netns)
    assert add.returncode == 0, add.stderr
    added = json.loads(add.stdout)
    entry = engine.cache.read(attachment.key)
    assert entry.result["ips"] == added["ips"]
    assert entry.config == (conf_dir / "10-interop.conflist").read_bytes()
    assert engine.check(network, attachment).ran
    assert engine.delete(network, attachment) is True
    assert reservations(tmp_path) == []
    gone = run_libcni(libcni, "check", conf_dir, engine.cache.directory, attachment.netns)
    assert gone.returncode != 0  # nothing is attached any more: host-local finds no address


def test_libcni_gc_deletes_every_attachment_it_is_not_told_is_valid_the_collections_too(
        gc_libcni, setup, make_netns):
    """libcni's GCNetworkList (cnitool gc) DELs every cached attachment of the network missing from
    its valid list, whoever made it: beside the collection, pass its attachments as valid."""
    engine, network, kept, conf_dir, tmp_path = setup
    dropped = Attachment(network.name, cnitool_container_id(make_netns()), make_netns())
    kept_address = engine.add(network, kept)["ips"][0]["address"].split("/")[0]
    engine.add(network, dropped)
    assert len(reservations(tmp_path)) == 2

    gc = run_libcni(gc_libcni, "gc", conf_dir, engine.cache.directory, "-",
                    CNI_VALID_ATTACHMENTS=f"{kept.container_id}/{kept.ifname}")
    assert gc.returncode == 0, gc.stderr
    assert engine.cache.read(kept.key) is not None
    assert engine.cache.read(dropped.key) is None
    assert reservations(tmp_path) == [kept_address]

    gc = run_libcni(gc_libcni, "gc", conf_dir, engine.cache.directory, "-")
    assert gc.returncode == 0, gc.stderr
    assert engine.cache.read(kept.key) is None
    assert reservations(tmp_path) == []


def test_libcni_status_agrees_with_the_engine(gc_libcni, setup):
    engine, network, _attachment, conf_dir, _tmp_path = setup
    status = run_libcni(gc_libcni, "status", conf_dir, engine.cache.directory, "-")
    assert status.returncode == 0, status.stderr
    expected = [True] * len(network.plugins) if gc_libcni.cni_version == "1.1.0" else None  # None: no STATUS
    statuses = engine.status(network)
    assert (statuses if statuses is None else [plugin.ready for plugin in statuses]) == expected


def test_libcni_status_reaches_the_plugins_of_a_1_1_0_network(gc_libcni, setup):
    """STATUS is sent from cniVersion 1.1.0 on: a plugin missing from the path then fails it."""
    engine, network, _attachment, conf_dir, _tmp_path = setup
    if gc_libcni.cni_version != "1.1.0":
        pytest.skip(f"the plugins in {PLUGINS} stop at cniVersion 1.0.0, which has no STATUS")
    conf = json.loads((conf_dir / "10-interop.conflist").read_text())
    conf["plugins"].append({"type": "cnit-e-absent"})
    (conf_dir / "10-interop.conflist").write_text(json.dumps(conf))
    status = run_libcni(gc_libcni, "status", conf_dir, engine.cache.directory, "-")
    assert status.returncode != 0 and "cnit-e-absent" in status.stderr
