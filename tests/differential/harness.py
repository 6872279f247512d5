# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a conflist through the validator and through the real plugin binaries (ADD, then DEL,
in a throwaway network namespace), and say whether they agree.

Safety: every copy is rewritten before either side sees it: bridges, masters and devices get
the test prefix (the masters and devices are veths the harness creates), IPv4 subnets move to
10.70-10.99.x.x, IPv6 ones to fd00:77::/32, host-local and tuning state goes to a temporary
directory, and ipMasq is turned off, so nothing is ever routed or masqueraded off the host.
Egress shaping (an ifb device outside the prefix) and IPv4 subnets wider than /16 are not run."""

from __future__ import annotations

import copy
import ipaddress
import itertools
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
from ansible_collections.cnikit.cni.plugins.module_utils._errors import CNIError
from ansible_collections.cnikit.cni.plugins.module_utils._exec import PluginExecutor
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules.registry import IPAM, PLUGINS
from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_network_list

sys.path.insert(0, str(Path(__file__).parents[1] / "utils"))
sys.path.insert(0, str(Path(__file__).parent))
import hostclean  # noqa: E402  pylint: disable=wrong-import-position
import releases  # noqa: E402  pylint: disable=wrong-import-position
from stand_in_host import run_command  # noqa: E402  pylint: disable=wrong-import-position

import mutations  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order

PREFIX = "cnit-x-"
PLUGIN_DIR = releases.PLUGIN_DIR
CORPUS = Path(__file__).parent / "corpus"
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"
# Link kinds whose kernel module this host may lack, and the plugins that need them.
MODULE_KINDS = {"ipvlan": "ipvlan", "vlan": "vlan", "vrf": "vrf", "dummy": "dummy"}
# Failures that say the host, not the configuration, is missing something.
ENVIRONMENT_MARKERS = ("failed to find plugin", "error dialing DHCP daemon", "Unknown device type",
                       "operation not supported")
_counter = itertools.count(1)


@dataclass
class Outcome:
    """One case: what the validator said, what the binaries did, and the verdict."""

    case_id: str
    plugin: str
    errors: list
    binary: str  # "works", "fails" or "environment"
    message: str = ""
    verdict: str = field(init=False)

    def __post_init__(self) -> None:
        if self.binary == "environment":
            self.verdict = "environment"
        elif bool(self.errors) == (self.binary == "fails"):
            self.verdict = "agree"
        else:
            self.verdict = "false error" if self.errors else "miss"


# --- the corpus and the mutations ------------------------------------------------------------------

def corpus_cases() -> list:
    """[(plugin, case id, conflist)] of the real-world files; the plugin is the first one."""
    sources = json.loads((CORPUS / "SOURCES.json").read_text())
    cases = []
    for name in sorted(sources):
        conf = json.loads((CORPUS / name).read_text())
        first = next((p.get("type") for p in conf.get("plugins", []) if isinstance(p, dict)), "?")
        cases.append((first if first in PLUGINS else "third-party", name, conf))
    return cases


def mutation_cases() -> list:
    return list(mutations.MUTATIONS)


# --- the host: module probes and the links the cases use ----------------------------------------

def missing_kinds() -> set:
    """Link kinds this kernel cannot create (their module is missing)."""
    missing = set()
    for kind in MODULE_KINDS.values():
        name = f"{PREFIX}probe"
        extra = {"vrf": ["table", "4242"], "vlan": ["id", "5"], "ipvlan": []}.get(kind, [])
        link = ["link", "lo"] if kind in ("vlan", "ipvlan") else []
        done = subprocess.run(["ip", "link", "add", name, *link, "type", kind, *extra], capture_output=True, text=True, check=False)
        if "Unknown device type" in done.stderr:
            missing.add(kind)
        subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
    return missing


def _veth(name: str) -> None:
    subprocess.run(["ip", "link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b"], check=True, capture_output=True)
    subprocess.run(["ip", "link", "set", f"{name}a", "up"], check=True, capture_output=True)


# --- rewriting a copy for this host ---------------------------------------------------------------

class _Addresses:
    """Moves each distinct /16 (IPv4) or /48 (IPv6) of a conflist to a test range of its own."""

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.v4 = {}
        self.v6 = {}
        self.unsafe = False

    def _v4(self, address):
        key = int(address) >> 16
        target = self.v4.setdefault(key, 70 + (self.slot * 3 + len(self.v4)) % 30)
        return ipaddress.IPv4Address((10 << 24) | (target << 16) | (int(address) & 0xFFFF))

    def _v6(self, address):
        key = int(address) >> 80
        target = self.v6.setdefault(key, (self.slot * 3 + len(self.v6)) % 65536)
        return ipaddress.IPv6Address((0xFD000077 << 96) | (target << 80) | (int(address) & ((1 << 80) - 1)))

    def move(self, text: str) -> str:
        address, _slash, prefix = text.partition("/")
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return text
        if ip.is_unspecified or ip.is_loopback or ip.is_link_local:
            return text
        length = int(prefix) if prefix.isdigit() else None
        if ip.version == 4:
            if length is not None and length < 16:
                self.unsafe = True
                return text
            moved = self._v4(ip)
        else:
            if length is not None and length < 48:
                length = 48
            moved = self._v6(ip)
        return f"{moved}/{length}" if prefix else str(moved)


def prepare(conf, slot: int, workdir: str) -> tuple:
    """(the copy both sides see, reason it must not run here or None)."""
    conf = copy.deepcopy(conf)
    if not isinstance(conf, dict):
        return conf, None
    addresses = _Addresses(slot)
    conf = _move_addresses(conf, addresses)
    reason = None
    for plugin in conf.get("plugins") if isinstance(conf.get("plugins"), list) else []:
        if not isinstance(plugin, dict):
            continue
        if (plugin.get("type") == "bridge" or "bridge" in plugin) and not str(plugin.get("bridge", "")).startswith(PREFIX):
            plugin["bridge"] = f"{PREFIX}b{slot}"
        for key, value in (("master", f"{PREFIX}m{slot}a"), ("device", f"{PREFIX}h{slot}a")):
            if key in plugin and not str(plugin[key]).startswith(PREFIX):
                plugin[key] = value
        if plugin.get("ipMasq") is True:
            plugin["ipMasq"] = False
        if plugin.get("type") == "tuning":
            plugin["dataDir"] = f"{workdir}/tuning"
        ipam = plugin.get("ipam")
        if isinstance(ipam, dict) and ipam.get("type") == "host-local":
            ipam["dataDir"] = f"{workdir}/ipam"
        if any(plugin.get(k) for k in ("egressRate", "egressBurst")):
            reason = "egress shaping creates an ifb device outside the test prefix"
        if plugin.get("type") in ("macvlan", "ipvlan", "vlan") and "master" not in plugin:
            reason = reason or "without master the plugin would use the host's default-route interface"
    if addresses.unsafe:
        reason = reason or "an IPv4 subnet wider than /16 would cover other tests' ranges"
    return conf, reason


def _move_addresses(node, addresses):
    if isinstance(node, dict):
        return {k: _move_addresses(v, addresses) for k, v in node.items()}
    if isinstance(node, list):
        return [_move_addresses(v, addresses) for v in node]
    if isinstance(node, str) and re.fullmatch(r"[0-9A-Fa-f:.]+(/[0-9]+)?", node) and ("." in node or ":" in node):
        return addresses.move(node)
    return node


# --- running one case --------------------------------------------------------------------------------

def validate(conf) -> list:
    """The validator's errors, as a user gets them on this host (binary checks on)."""
    executor = PluginExecutor([PLUGIN_DIR], 30, run_command)
    report = validate_network_list(conf, installed_versions=executor.supported_versions,
                                   installed_release=executor.release)
    return [str(f) for f in report.errors]


def run_binaries(conf, netns: str, workdir: str) -> tuple:
    """("works" | "fails", message): ADD, then DEL, through the engine (libcni's semantics)."""
    try:
        network = parse_network_list(conf)
    except CNIError as exc:
        return "fails", f"libcni refuses the list: {exc}"
    engine = Engine([PLUGIN_DIR], f"{workdir}/cache", timeout=30)
    try:
        attachment = Attachment(network.name, f"{PREFIX}diff", f"/var/run/netns/{netns}")  # refuses a bad name
        engine.add(network, attachment)
    except CNIError as exc:
        return "fails", str(exc)
    try:
        engine.delete(network, attachment)
    except CNIError as exc:
        return "fails", f"ADD worked, DEL failed: {exc}"
    return "works", ""


def run_case(plugin: str, case_id: str, conf, missing: set) -> Outcome:
    slot = next(_counter) % 1000
    netns = f"{PREFIX}d{slot}"
    forward = Path(IP_FORWARD).read_text().strip()
    with tempfile.TemporaryDirectory(prefix=PREFIX) as workdir:
        copy_, reason = prepare(conf, slot, workdir)
        try:
            # The masters exist before validation, as they would on a real host.
            subprocess.run(["ip", "netns", "add", netns], check=True, capture_output=True)
            _veth(f"{PREFIX}m{slot}")
            _veth(f"{PREFIX}h{slot}")
            errors = validate(copy_)
            kinds = {MODULE_KINDS[t] for t in _types(copy_) if t in MODULE_KINDS} & missing
            if kinds:
                return Outcome(case_id, plugin, errors, "environment", f"kernel module missing: {', '.join(sorted(kinds))}")
            if reason:
                return Outcome(case_id, plugin, errors, "environment", f"not run on this host: {reason}")
            binary, message = run_binaries(copy_, netns, workdir)
        finally:
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)
            for name in (f"{PREFIX}b{slot}", f"{PREFIX}m{slot}a", f"{PREFIX}h{slot}a"):
                subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
            hostclean.drop_interface_rules({f"{PREFIX}b{slot}"}.__contains__)  # the firewall plugin's, on the bridge
            hostclean.clean(f"{PREFIX}d{slot}", ip_forward=forward)
    if binary == "fails" and any(marker in message for marker in ENVIRONMENT_MARKERS):
        binary = "environment"
    return Outcome(case_id, plugin, errors, binary, message)


def _types(conf) -> list:
    plugins = conf.get("plugins") if isinstance(conf, dict) else None
    types = []
    for plugin in plugins if isinstance(plugins, list) else []:
        if isinstance(plugin, dict):
            types.append(plugin.get("type"))
            ipam = plugin.get("ipam")
            if isinstance(ipam, dict):
                types.append(ipam.get("type"))
    return types


def known_plugins() -> list:
    return sorted(PLUGINS) + sorted(IPAM)
