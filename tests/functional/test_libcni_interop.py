# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Interoperability with the real libcni (Debian's golang-github-appc-cni-dev): what the engine
adds, libcni CHECKs and DELs through the result cache, and the other way round. The Go program
in libcni_tool/ makes the same libcni calls as cnitool."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import releases

from ansible_collections.cnikit.cni.plugins.module_utils._conflist import find_network
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import cnitool_container_id

PLUGINS = releases.PLUGIN_DIR
LIBCNI_SOURCE = Path("/usr/share/gocode/src/github.com/containernetworking/cni/libcni")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(f"{PLUGINS}/bridge"),
                                reason="needs root and Debian's containernetworking-plugins")


@pytest.fixture(scope="module")
def libcni_tool(tmp_path_factory):
    """The Go program built offline against the packaged libcni (scripts/lib.sh installs it)."""
    if not shutil.which("go") or not LIBCNI_SOURCE.is_dir():
        pytest.fail("golang-go and golang-github-appc-cni-dev are needed (installed by scripts/lib.sh)")
    work = tmp_path_factory.mktemp("libcni")
    binary = work / "libcni-tool"
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode", GOPROXY="off", GOFLAGS="",
               GOCACHE=str(work / "gocache"))
    subprocess.run(["go", "build", "-o", str(binary), str(Path(__file__).parent / "libcni_tool" / "main.go")],
                   env=env, check=True, capture_output=True)
    return binary


@pytest.fixture
def setup(tmp_path, make_netns, bridge_name, subnet):
    conf_dir, cache_dir = tmp_path / "net.d", tmp_path / "cache"
    conf_dir.mkdir()
    (conf_dir / "10-interop.conflist").write_text(json.dumps({
        "cniVersion": "1.0.0", "name": "cnit-e-interop",
        "plugins": [{"type": "bridge", "bridge": bridge_name,
                     "ipam": {"type": "host-local", "subnet": subnet, "dataDir": str(tmp_path / "ipam")}},
                    {"type": "tuning", "mtu": 1400}]}))
    netns = make_netns()
    engine = Engine([PLUGINS], str(cache_dir), timeout=30)
    attachment = Attachment(cnitool_container_id(netns), netns)
    return engine, find_network(str(conf_dir), "cnit-e-interop"), attachment, conf_dir, tmp_path


def run_libcni(tool, verb, conf_dir, cache_dir, netns) -> subprocess.CompletedProcess:
    env = dict(os.environ, NETCONFPATH=str(conf_dir), CNI_PATH=PLUGINS, CNI_CACHE_DIR=str(cache_dir))
    return subprocess.run([str(tool), verb, "cnit-e-interop", netns], env=env, capture_output=True, text=True,
                          check=False)


def reservations(tmp_path) -> list:
    directory = tmp_path / "ipam" / "cnit-e-interop"
    return sorted(p.name for p in directory.iterdir() if p.name[0].isdigit()) if directory.exists() else []


def test_libcni_reads_checks_and_deletes_what_the_engine_added(libcni_tool, setup):
    engine, network, attachment, conf_dir, tmp_path = setup
    result = engine.add(network, attachment)
    cached = run_libcni(libcni_tool, "cached", conf_dir, engine.cache_dir, attachment.netns)
    assert cached.returncode == 0, cached.stderr
    assert json.loads(cached.stdout)["ips"][0]["address"] == result["ips"][0]["address"]
    check = run_libcni(libcni_tool, "check", conf_dir, engine.cache_dir, attachment.netns)
    assert check.returncode == 0, check.stderr
    delete = run_libcni(libcni_tool, "del", conf_dir, engine.cache_dir, attachment.netns)
    assert delete.returncode == 0, delete.stderr
    assert engine.cached_entry(network.name, attachment) is None
    assert reservations(tmp_path) == []


def test_engine_reads_checks_and_deletes_what_libcni_added(libcni_tool, setup):
    engine, network, attachment, conf_dir, tmp_path = setup
    add = run_libcni(libcni_tool, "add", conf_dir, engine.cache_dir, attachment.netns)
    assert add.returncode == 0, add.stderr
    added = json.loads(add.stdout)
    entry = engine.cached_entry(network.name, attachment)
    assert entry.result["ips"] == added["ips"]
    assert entry.config == (conf_dir / "10-interop.conflist").read_bytes()
    assert engine.check(network, attachment).ran
    assert engine.delete(network, attachment) is True
    assert reservations(tmp_path) == []
    gone = run_libcni(libcni_tool, "check", conf_dir, engine.cache_dir, attachment.netns)
    assert gone.returncode != 0  # nothing is attached any more: host-local finds no address
