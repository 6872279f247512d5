# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pieces of the reliability suite: counts (CI-sized by default, the documented full
counts with CNIKIT_RELIABILITY_FULL=1), a host fixture that hands out prefixed namespaces,
bridges and private directories and always cleans up, and a snapshot of everything an
attachment can leave behind (veths, host-local reservations, iptables rules, cache files)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hostclean  # noqa: E402  pylint: disable=wrong-import-position
import releases  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.cnikit.cni.plugins.module_utils import _cache  # noqa: E402
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list  # noqa: E402

SUITE_PREFIX = "cnit-r-"
REAL_PLUGINS = releases.PLUGIN_DIR
FULL = os.environ.get("CNIKIT_RELIABILITY_FULL") == "1"


def count(default: int, full: int) -> int:
    """The number of repetitions: CI-sized by default, the documented count in full runs."""
    return full if FULL else default


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def netns_names() -> list:
    return [line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line.strip()]


def link_names(netns: str | None = None) -> list:
    argv = ["ip", "-j", "link", "show"] if netns is None else ["ip", "-n", netns, "-j", "link", "show"]
    return [link["ifname"] for link in json.loads(run(*argv).stdout or "[]")]


def nat_rules() -> str:
    return run("iptables", "-t", "nat", "-S").stdout


def _run_prefix() -> str:
    """``cnit-r-<2 hex digits>``, a tag no other run on this host uses now: concurrent runs of the
    suite (several checkouts' test commands) then never clean up each other's namespaces."""
    names = netns_names() + link_names() if shutil.which("ip") else []
    used = {name[len(SUITE_PREFIX):len(SUITE_PREFIX) + 2] for name in names if name.startswith(SUITE_PREFIX)}
    free = [f"{tag:02x}" for tag in range(256) if f"{tag:02x}" not in used]
    return SUITE_PREFIX + random.choice(free or ["ff"])


def portmap_chain_hash(network: str, container_id: str) -> str:
    """portmap's per-container chain name is a prefix of this (libcni utils.FormatChainName)."""
    return "CNI-DN-" + hashlib.sha512((network + container_id).encode()).hexdigest()


PREFIX = _run_prefix()


def needs_host():
    if os.geteuid() != 0:
        pytest.skip("needs root: creates namespaces, links and iptables rules")
    if not os.path.exists(os.path.join(REAL_PLUGINS, "bridge")):
        pytest.skip(f"needs the real plugins in {REAL_PLUGINS}")


class Host:
    """Prefixed host resources for one test, all removed by the fixture's finalizer."""

    def __init__(self, tmp_path: Path, index: int):
        self.index = index
        self.root = tmp_path
        self.conf_dir = str(tmp_path / "net.d")
        self.cache_dir = str(tmp_path / "cache")
        self.data_dir = str(tmp_path / "ipam")
        self.fake_dir = str(tmp_path / "fakebin")
        self.bridge = f"{PREFIX}br{index}"
        self.namespaces = []
        os.makedirs(self.conf_dir)

    @property
    def cni_path(self) -> list:
        return [self.fake_dir, REAL_PLUGINS]

    def netns(self, name: str) -> str:
        """Create ``cnit-r-<name>`` and return its path."""
        full = f"{PREFIX}{name}"
        run("ip", "netns", "add", full)
        self.namespaces.append(full)
        return f"/var/run/netns/{full}"

    def conflist(self, name: str, plugins: list, subnet: str = "10.247.0.0/24", version: str = "1.0.0",
                 ipam_extra: dict | None = None) -> dict:
        """A bridge + host-local network (private dataDir) followed by ``plugins``."""
        bridge = {"type": "bridge", "bridge": self.bridge, "isGateway": True, "ipMasq": False,
                  "ipam": {"type": "host-local", "subnet": subnet, "dataDir": self.data_dir, **(ipam_extra or {})}}
        return {"cniVersion": version, "name": name, "plugins": [bridge] + plugins}

    def write_conflist(self, conf: dict) -> str:
        path = os.path.join(self.conf_dir, f"50-{conf['name']}.conflist")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(conf, handle)
        return path

    def reservations(self, network: str) -> dict:
        """host-local's reservations in our dataDir: address -> owning container ID."""
        found = {}
        ipam_dir = os.path.join(self.data_dir, network)
        for name in os.listdir(ipam_dir) if os.path.isdir(ipam_dir) else []:
            if name != "lock" and not name.startswith("last_reserved_ip"):
                try:
                    found[name] = Path(ipam_dir, name).read_text().split("\n")[0].strip()
                except FileNotFoundError:
                    continue  # released by a concurrent DEL since the listing
        return found

    def state(self, network: str, container_ids: list) -> dict:
        """Everything attachments of ``network`` by ``container_ids`` can leave on the host."""
        veths = [link["ifname"] for link in json.loads(run("ip", "-j", "link", "show").stdout or "[]")
                 if link.get("master") == self.bridge]
        reservations = {ip: owner for ip, owner in self.reservations(network).items() if owner in container_ids}
        rules = nat_rules()
        chains = [line.split()[1] for line in rules.splitlines() if line.startswith("-N CNI-DN-")]
        # portmap's rules carry a comment 'id: "<container ID>"' (quotes escaped by iptables -S).
        marks = [f'id: \\"{cid}\\"' for cid in container_ids]
        nat = [line for line in rules.splitlines() if any(mark in line for mark in marks)]
        hashes = {portmap_chain_hash(network, cid) for cid in container_ids}
        _OUR_CHAIN_HASHES.update(hashes)
        nat += [c for c in chains if any(h.startswith(c) for h in hashes)]
        results = os.path.join(self.cache_dir, _cache.RESULTS_SUBDIR)
        pending = os.path.join(self.cache_dir, _cache.PENDING_SUBDIR)
        return {
            "veths": veths,
            "reservations": reservations,
            "nat": nat,
            "cache": _entries_of(results, network, container_ids),
            "pending": _entries_of(pending, network, container_ids),
        }

    def assert_clean(self, network: str, container_ids: list, namespaces: list = (), veths: bool = True) -> None:
        """Nothing of these attachments is left: no veth, reservation, rule, cache file or marker,
        and no interface but lo in their namespaces. ``veths=False`` skips the bridge's ports,
        which cannot be told apart by container while others come and go."""
        state = self.state(network, container_ids)
        if not veths:
            del state["veths"]
        leftovers = {key: value for key, value in state.items() if value}
        assert not leftovers, f"leaked: {leftovers}"
        for netns in namespaces:
            assert link_names(os.path.basename(netns)) == ["lo"], f"{netns} still has {link_names(os.path.basename(netns))}"


def _entries_of(directory: str, network: str, container_ids: list) -> list:
    """Files of ``directory`` named for an attachment of these containers, or half-written for one
    (atomic_write's ``.<name>.<random>.tmp``). Other containers' writes may be under way."""
    names = os.listdir(directory) if os.path.isdir(directory) else []
    prefixes = tuple(f"{network}-{cid}-" for cid in container_ids)
    return sorted(n for n in names if n.removeprefix(".").startswith(prefixes))


def addresses_in(netns: str, ifname: str = "eth0") -> list:
    out = run("ip", "-n", os.path.basename(netns), "-j", "addr", "show", "dev", ifname, check=False).stdout
    return [f"{a['local']}/{a['prefixlen']}" for link in json.loads(out or "[]") for a in link.get("addr_info", [])
            if a.get("family") == "inet"]


def valid_cache_files(cache_dir: str) -> list:
    """Parse every cache entry; return them (a CacheError fails the caller). Half-written files are
    skipped: another writer may be under way, and assert_clean reports those a writer left."""
    directory = os.path.join(cache_dir, _cache.RESULTS_SUBDIR)
    entries = []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if name.startswith("."):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as handle:
                entries.append(_cache._parse(path, handle.read()))  # pylint: disable=protected-access
        except FileNotFoundError:
            continue  # deleted by a concurrent DEL since the listing
        parse_network_list(entries[-1].config)
    return entries


def drop_portmap_rules(prefix: str) -> list:
    """Remove the nat rules portmap made for containers whose ID starts with ``prefix`` and their
    CNI-DN-* chains (a test that failed before its DEL leaves them; a deleted namespace does not
    take them along). Returns the chains removed."""
    return hostclean.drop_portmap_rules([line for line in nat_rules().splitlines() if f'id: \\"{prefix}' in line])


_COUNTER = [0]
_FIGURES = {}


@pytest.fixture
def figures(request):
    """Record what a randomised test saw (where kills landed, GC passes...): printed in the
    terminal summary, and written as JSON to $CNIKIT_RELIABILITY_FIGURES when set."""
    def record(values: dict) -> None:
        _FIGURES[request.node.name] = values
    return record


def pytest_terminal_summary(terminalreporter):
    if not _FIGURES:
        return
    terminalreporter.section(f"reliability figures ({'full' if FULL else 'default'} counts)")
    for name, values in _FIGURES.items():
        terminalreporter.write_line(f"{name}: {json.dumps(values, sort_keys=True)}")
    if os.environ.get("CNIKIT_RELIABILITY_FIGURES"):
        with open(os.environ["CNIKIT_RELIABILITY_FIGURES"], "w", encoding="utf-8") as handle:
            json.dump({"full": FULL, "figures": _FIGURES}, handle, indent=2, sort_keys=True)


@pytest.fixture
def host(tmp_path, request):
    """A Host whose namespaces, links, portmap chains and ip_forward are restored afterwards,
    and which checks that nothing prefixed survived the clean-up."""
    needs_host()
    _COUNTER[0] += 1
    forward = Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()
    item = Host(tmp_path, _COUNTER[0])

    def finish():
        drop_portmap_rules(PREFIX)
        hostclean.clean_namespaces(PREFIX)
        hostclean.clean_links(PREFIX)
        run("sysctl", "-qw", f"net.ipv4.ip_forward={forward}")
        left = [n for n in netns_names() if n.startswith(PREFIX)] + [n for n in link_names() if n.startswith(PREFIX)]
        assert not left, f"clean-up left {left}"

    request.addfinalizer(finish)
    return item


@pytest.fixture(scope="session", autouse=True)
def portmap_chains():
    """portmap's global CNI-HOSTPORT-* chains, once the whole run is over (dropped only when no
    container of anyone uses them; per test, that would race with portmap ADDs running elsewhere)."""
    yield
    if os.geteuid() == 0 and shutil.which("iptables"):
        hostclean.clean_portmap_chains()
        dn_chains = [c for c in nat_rules().splitlines() if c.startswith("-N CNI-DN-")]
        ours = [c for c in dn_chains if any(h.startswith(c.split()[1]) for h in _OUR_CHAIN_HASHES)]
        assert not ours, f"portmap chains of this run left: {ours}"


_OUR_CHAIN_HASHES = set()
