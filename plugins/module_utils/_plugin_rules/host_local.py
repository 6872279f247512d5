# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""IPAM host-local (plugins/ipam/host-local): addresses from ranges, leases in files."""

from __future__ import annotations

import ipaddress
import os
import stat

from .._schemas import DEFS, RANGE
from ._common import PluginRules, Subnet, check_routes, is_ip, json_path, list_of, map_of, parse_cidr

SCHEMA = {
    "type": "object",
    "properties": {
        "type": DEFS["string"],
        "ranges": {"type": "array", "minItems": 1, "items": {"type": "array", "minItems": 1, "items": RANGE}},
        "subnet": DEFS["cidr"], "rangeStart": DEFS["ip"], "rangeEnd": DEFS["ip"], "gateway": DEFS["ip"],
        "routes": DEFS["routes"], "dataDir": DEFS["string"], "resolvConf": DEFS["string"],
    },
}
DEFAULT_DATA_DIR = "/var/lib/cni/networks"
RESERVATION_MAX_BYTES = 4096  # a container ID (at most 1024 bytes in practice) and an ifname
# Calico's CNI plugin replaces these with the node's pod CIDR before it runs host-local.
CALICO_PLACEHOLDERS = ("usePodCidr", "usePodCidrIPv6")


def range_sets(ipam: dict, base: list) -> list:
    """[[(path parts, range dict)]] per range set: the legacy subnet first, as host-local does."""
    sets = []
    if "subnet" in ipam:
        legacy = {k: ipam[k] for k in ("subnet", "rangeStart", "rangeEnd", "gateway") if k in ipam}
        sets.append([(base, legacy)])
    for set_index, range_set in enumerate(list_of(ipam.get("ranges"))):
        if isinstance(range_set, list):
            sets.append([(base + ["ranges", set_index, i], r) for i, r in enumerate(range_set) if isinstance(r, dict)])
    return sets


def subnets(ipam: dict) -> list:
    """The subnets of the section's ranges, for the cross-network checks."""
    return [Subnet(iface.network, json_path(parts + ["subnet"]))
            for range_set in range_sets(ipam, []) for parts, item in range_set
            if (iface := parse_cidr(item.get("subnet"))) is not None]


def reserved_addresses(ipam: dict, network: str, container_id: str, ifname: str) -> list:
    """The addresses host-local holds for this attachment, in CIDR form where a range of the
    section holds them: each of its files ``<dataDir>/<network>/<address>`` holds the container
    ID and the ifname, one a line. What cannot be read is no reservation."""
    data_dir = ipam.get("dataDir") if isinstance(ipam.get("dataDir"), str) and ipam.get("dataDir") else DEFAULT_DATA_DIR
    directory = os.path.join(data_dir, network)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    owner = (container_id, ifname)
    return [_with_prefix(address, ipam) for address in names
            if _is_address(address) and _reservation_owner(os.path.join(directory, address)) == owner]


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _reservation_owner(path: str) -> tuple | None:
    """(container ID, ifname) of a reservation file, None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        text = handle.read(RESERVATION_MAX_BYTES).decode("utf-8", "replace")
    lines = [line.strip() for line in text.splitlines()]
    return (lines[0], lines[1]) if len(lines) >= 2 else None


def _with_prefix(address: str, ipam: dict) -> str:
    """``address/prefix`` of the section's subnet that holds it; the bare address if none does
    (ranges given at run time)."""
    ip = ipaddress.ip_address(address)
    for subnet in subnets(ipam):
        if ip.version == subnet.network.version and ip in subnet.network:
            return f"{ip}/{subnet.network.prefixlen}"
    return str(ip)


def gateway_sets(ipam: dict) -> list:
    """[(path parts under the section, [gateways])]: one entry per range set, of which host-local
    hands out one address each (the legacy subnet first), with the gateways of its ranges, with
    their subnet's prefix: each range's ``gateway``, else the subnet's first address."""
    found = []
    for range_set in range_sets(ipam, []):
        gateways = []
        for _parts, item in range_set:
            iface = parse_cidr(item.get("subnet"))
            if iface is None:
                continue
            gateway = item["gateway"] if is_ip(item.get("gateway")) else str(iface.network.network_address + 1)
            gateways.append(ipaddress.ip_interface(f"{gateway}/{iface.network.prefixlen}"))
        if gateways:
            first_parts = range_set[0][0]
            found.append((first_parts[:-1] if first_parts else ["subnet"], gateways))
    return found


def _bounds(parts: list, item: dict, network, ctx) -> dict:
    bounds = {}
    for key in ("rangeStart", "rangeEnd", "gateway"):
        text = item.get(key)
        if not is_ip(text):
            continue
        address = ipaddress.ip_address(text)
        problem = f"is not of the same IP family as subnet {network}" if address.version != network.version \
            else None if address in network else f"is outside subnet {network}"
        if problem and key == "gateway":  # host-local does not check it; only routes through it fail
            ctx.report.warn(json_path(parts + [key]), problem, text)
        elif problem:
            ctx.report.error(json_path(parts + [key]), problem, text)
        else:
            bounds[key] = address
    return bounds


def _check_allocatable(parts: list, item: dict, network, bounds: dict, ctx) -> None:
    """host-local never hands out the gateway: a range holding only the gateway is empty."""
    first = bounds.get("rangeStart", network.network_address + 1)
    last = bounds.get("rangeEnd", network.broadcast_address - (1 if network.version == 4 else 0))
    gateway = bounds.get("gateway", network.network_address + 1) if "gateway" in bounds or "gateway" not in item else None
    if first > last:
        ctx.report.error(json_path(parts + ["rangeStart"]), f"is after rangeEnd {last}", str(first))
        return
    size = int(last) - int(first) + 1 - (1 if gateway is not None and first <= gateway <= last else 0)
    if size <= 0:
        ctx.report.error(json_path(parts), f"has no address to allocate: its only address {first} is the gateway, "
                         "which host-local never assigns")


def _check_range(parts: list, item: dict, ctx):
    """Check one range; return its network (and default gateway), or None if unusable."""
    if item.get("subnet") in CALICO_PLACEHOLDERS:
        return None
    iface = parse_cidr(item.get("subnet"))
    if iface is None:
        return None  # the schema already reported it
    network = iface.network
    subnet_path = json_path(parts + ["subnet"])
    if iface.ip != network.network_address:
        ctx.report.error(subnet_path, f"has host bits set; the network address is {network.network_address}/{network.prefixlen}",
                         item["subnet"])
        return None
    if network.max_prefixlen - network.prefixlen < 2:
        ctx.report.error(subnet_path, f"is too small to allocate from (at most /{network.max_prefixlen - 2})", item["subnet"])
        return None
    bounds = _bounds(parts, item, network, ctx)
    _check_allocatable(parts, item, network, bounds, ctx)
    gateway = item.get("gateway") if is_ip(item.get("gateway")) else str(network.network_address + 1)
    return network, gateway


def _placeholder_subnet(ipam: dict) -> bool:
    return any(item.get("subnet") in CALICO_PLACEHOLDERS for range_set in range_sets(ipam, []) for _p, item in range_set)


def check(plugin: dict, ctx) -> None:
    ipam = map_of(plugin.get("ipam"))
    ipam_base = ctx.base + ["ipam"]
    if "subnet" in ipam and ipam["subnet"] not in CALICO_PLACEHOLDERS:
        ctx.warn(["ipam", "subnet"], "is host-local's flat form, which podman 4.x cannot read (after a 'podman network "
                 "reload' its containers keep only lo); write it as ranges: [[{\"subnet\": ...}]]", ipam["subnet"])
    sets = range_sets(ipam, ipam_base)
    if not sets and map_of(plugin.get("capabilities")).get("ipRanges") is not True:
        ctx.error(["ipam", "ranges"], "is required: no IP ranges specified (give ranges or subnet)")
        return
    set_networks = []
    gateways = {}
    for range_set in sets:
        networks = []
        for parts, item in range_set:
            checked = _check_range(parts, item, ctx)
            if checked is None:
                continue
            network, gateway = checked
            gateways.setdefault(network.version, gateway)
            path = json_path(parts + ["subnet"])
            for other, other_path in networks:
                if other.version != network.version:
                    ctx.report.error(path, f"mixes address families in one range set (with {other_path})", item["subnet"])
                elif network.overlaps(other):
                    ctx.report.error(path, f"overlaps {other} ({other_path}) in the same range set", item["subnet"])
            networks.append((network, path))
            ctx.subnets.append(Subnet(network, path))
        for earlier_index, earlier in enumerate(set_networks):
            if any(mine.overlaps(theirs) for mine, _path in networks for theirs, _other in earlier
                   if mine.version == theirs.version):
                ctx.report.error(networks[0][1], f"range set overlaps range set {earlier_index}", str(networks[0][0]))
        if networks:
            set_networks.append(networks)
    if not ctx.version_at_least("0.3.0") and ctx.version:
        families = [nets[0][0].version for nets in set_networks]
        if len(families) != len(set(families)):
            ctx.report.error("cniVersion", f"{ctx.version} does not support more than 1 address per family; use 0.3.0 or newer",
                             ctx.version)
    runtime_ranges = map_of(plugin.get("capabilities")).get("ipRanges") is True or _placeholder_subnet(ipam)
    networks = [] if runtime_ranges else [n for nets in set_networks for n, _p in nets]
    check_routes(ipam.get("routes"), ["ipam", "routes"], networks, ctx, gateways)


RULES = PluginRules(SCHEMA, check, gateway_sets=gateway_sets, subnets=subnets, honours_requested_ips=True,
                    reserved_addresses=reserved_addresses)
