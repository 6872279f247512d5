# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""bridge (plugins/main/bridge): a Linux bridge and a veth pair per container."""

from __future__ import annotations

import copy
import ipaddress
import os
import re

from .._netns import host_ipv4_address
from .._schemas import DEFS, VLAN_ID, not_both_true, only_while_true, plugin_schema
from ._common import KnownCheckDefect, PluginRules, check_masq_backend, check_mtu, is_int, list_of, map_of, parse_cidr

DEFAULT_BRIDGE = "cni0"  # the bridge's name when the configuration names none
TRUNK_ID = {"type": "integer"}  # 1..4094, checked with the release that reads vlanTrunk

SCHEMA = plugin_schema(
    {
        "bridge": DEFS["ifname"], "isGateway": DEFS["bool"], "isDefaultGateway": DEFS["bool"],
        "forceAddress": DEFS["bool"], "ipMasq": DEFS["bool"], "ipMasqBackend": DEFS["string"],
        "mtu": DEFS["uint"], "hairpinMode": DEFS["bool"], "promiscMode": DEFS["bool"],
        "vlan": VLAN_ID,
        "vlanTrunk": {"type": "array", "items": {
            "type": "object", "properties": {"minID": TRUNK_ID, "maxID": TRUNK_ID, "id": TRUNK_ID}}},
        "preserveDefaultVlan": DEFS["bool"], "macspoofchk": DEFS["bool"], "enabledad": DEFS["bool"],
        "disableContainerInterface": DEFS["bool"], "portIsolation": DEFS["bool"],
    },
    not_both_true("hairpinMode", "promiscMode", "cannot set hairpinMode and promiscMode at the same time"),
    only_while_true("ipMasq", "ipMasqBackend", DEFS["backend_ip"]),
)


SYSFS_NET = "/sys/class/net"


# --- defects of released versions' CHECK, which the engine tolerates ---------------------------------

def _with_current_bridge_mac(match: re.Match, prev_result: dict) -> dict | None:
    """The result with the bridge's MAC as it is now, read from sysfs; None if it is gone."""
    bridge = match.group("bridge")
    try:
        with open(os.path.join(SYSFS_NET, bridge, "address"), encoding="ascii") as handle:
            mac = handle.read().strip()
    except OSError:
        return None
    refreshed = copy.deepcopy(prev_result)
    for interface in refreshed.get("interfaces") or []:
        if isinstance(interface, dict) and interface.get("name") == bridge and not interface.get("sandbox"):
            interface["mac"] = mac
    return refreshed


def _with_route_gateways(_match: re.Match, prev_result: dict) -> dict | None:
    """The result with each route without ``gw`` given the gateway it was installed through:
    the first gateway of its family among the result's IPs, as the plugin uses it at ADD. None
    when no route lacks one, or a family has no gateway."""
    gateways = {}
    for ip in prev_result.get("ips") or []:
        address = parse_cidr(ip.get("address")) if isinstance(ip, dict) else None
        if address is not None and isinstance(ip.get("gateway"), str):
            gateways.setdefault(address.version, ip["gateway"])
    refreshed = copy.deepcopy(prev_result)
    filled = False
    for route in refreshed.get("routes") or []:
        if not isinstance(route, dict) or route.get("gw"):
            continue
        try:
            version = ipaddress.ip_network(route.get("dst"), strict=False).version
        except (TypeError, ValueError):
            return None
        if version not in gateways:
            return None
        route["gw"], filled = gateways[version], True
    return refreshed if filled else None


MAC_MOVED = KnownCheckDefect(
    "bridge-mac-moved", re.compile(r"^Bridge interface (?P<bridge>[^/\s]+) Mac doesn't match"),
    "a Linux bridge without a fixed MAC takes the lowest MAC of its ports, so it changes as other "
    "attachments join and leave, and the bridge plugin compares it with the MAC at ADD; the rest of "
    "the bridge plugin's CHECK passed with the bridge's current MAC",
    refresh=_with_current_bridge_mac)
ROUTE_WITHOUT_GW = KnownCheckDefect(
    "bridge-route-without-gw", re.compile(r"^Expected Route .*GW:<nil>.* not found in routing table"),
    "bridge before v1.3.0 looks for a route without gw as a route without a gateway, but the route was "
    "installed through the IPAM's gateway; the rest of the bridge plugin's CHECK passed with that gateway "
    "in the route", refresh=_with_route_gateways, fixed_in="1.3.0")


def _check_trunk(index: int, trunk: dict, ctx) -> None:
    where = ["vlanTrunk", index]
    for key in ("minID", "maxID", "id"):
        value = trunk.get(key)
        if is_int(value) and not 1 <= value <= 4094:
            ctx.refused_from("1.3.0", where + [key], "must be a VLAN ID from 1 to 4094", value)
    if ("minID" in trunk) != ("maxID" in trunk):
        missing = "maxID" if "minID" in trunk else "minID"
        ctx.refused_from("1.3.0", where + [missing], "is required: minID and maxID must be configured together")
    elif is_int(trunk.get("minID")) and is_int(trunk.get("maxID")) and trunk["minID"] > trunk["maxID"]:
        ctx.refused_from("1.3.0", where, "minID is greater than maxID", trunk)


def check(plugin: dict, ctx) -> None:
    for index, trunk in enumerate(list_of(plugin.get("vlanTrunk"))):
        if isinstance(trunk, dict):
            _check_trunk(index, trunk, ctx)
    ipam_type = map_of(plugin.get("ipam")).get("type")
    if plugin.get("disableContainerInterface") is True and ipam_type:
        ctx.refused_from("1.4.1", ["disableContainerInterface"], "cannot use IPAM when disableContainerInterface is set", True)
    if plugin.get("ipMasq") is True and not ipam_type:
        ctx.warn(["ipMasq"], "has no effect without an IPAM section with a type")
    check_mtu(plugin, ctx)
    check_masq_backend(plugin, ctx)
    _check_routes_without_gw(plugin, ctx)
    _check_one_ipv4_gateway(plugin, ctx)


def _gateway_mode(plugin: dict) -> bool:
    return plugin.get("isGateway") is True or plugin.get("isDefaultGateway") is True


def _value_at(node, parts: list):
    for part in parts:
        node = node[part]
    return node


def _check_one_ipv4_gateway(plugin: dict, ctx) -> None:
    """A gateway bridge is given the gateway of every address the IPAM hands out (ensureAddr, in
    both supported releases), and holds one IPv4 address: the second IPv4 gateway fails every ADD
    ("already has an IP address different from"), or, with forceAddress, replaces the first."""
    if not _gateway_mode(plugin) or not ctx.ipam_gateway_sets:
        return
    if map_of(plugin.get("capabilities")).get("ipRanges") is True:
        return  # ranges the runtime supplies replace these
    # Of a set of several ranges, host-local takes the first range's address while it has one.
    ipv4 = [(parts, gateways[0]) for parts, gateways in ctx.ipam_gateway_sets if gateways[0].version == 4]
    if len(ipv4) < 2:
        return
    name = plugin.get("bridge") or DEFAULT_BRIDGE
    first_parts, first = ipv4[0]
    advice = "give a gateway bridge one IPv4 range set (an IPv6 one beside it is fine)"
    for parts, gateway in ipv4[1:]:
        if gateway == first:
            continue
        told = (f"is a second IPv4 range set on gateway bridge {name}: the bridge plugin puts the gateway of each on the "
                f"bridge ({first} ({ctx.path('ipam', *first_parts)}), then {gateway})")
        value = _value_at(plugin["ipam"], parts)
        if plugin.get("forceAddress") is True:
            ctx.warn(["ipam"] + parts, f"{told}, and with forceAddress each replaces the one before, so the bridge keeps "
                     f"only {ipv4[-1][1]} and the addresses of {ctx.path('ipam', *first_parts)} have no gateway on this "
                     f"host; {advice}", value)
        else:
            ctx.error(["ipam"] + parts, f"{told}, and it refuses a second IPv4 address on the bridge, so every ADD fails "
                      f"('already has an IP address different from {gateway}'); {advice}", value)


def _check_routes_without_gw(plugin: dict, ctx) -> None:
    """An installed release whose CHECK fails on a route without gw: cnikit tolerates it, but
    other runtimes' CHECK (CRI-O, cnitool) report such attachments broken."""
    fixed = ROUTE_WITHOUT_GW.fixed_in
    if ctx.releases is None or ctx.releases.at_least(fixed):
        return
    certainly = "" if ctx.releases.before(fixed) else " (it may be one of them)"
    for index, route in enumerate(list_of(map_of(plugin.get("ipam")).get("routes"))):
        if isinstance(route, dict) and "dst" in route and not route.get("gw"):
            ctx.warn(["ipam", "routes", index], f"has no gw: the installed bridge plugin is {ctx.releases.label}, and "
                     f"releases before v{fixed} fail CHECK on such a route ('Expected Route ... not found in routing "
                     f"table'); cnikit tolerates it ({ROUTE_WITHOUT_GW.name}), other runtimes report the attachment "
                     f"broken{certainly}. Give the gw, or install v{fixed} or newer", route, of_host=True)


def add_blocker(plugin: dict, ipam_gateways) -> str | None:
    """A gateway bridge that already holds another IPv4 address: the plugin refuses to add a
    second one unless ``forceAddress`` is set (ensureAddr), so after a subnet change every ADD
    on this host fails until the bridge's old address is gone."""
    if not _gateway_mode(plugin) or plugin.get("forceAddress") is True or not ipam_gateways:
        return None
    wanted = [gateway for gateway in ipam_gateways if gateway.version == 4]
    name = plugin.get("bridge") or DEFAULT_BRIDGE
    held = host_ipv4_address(name) if wanted else None
    if held is None or held in wanted:
        return None
    return (f"bridge {name} on this host holds {held}, not the gateway {wanted[0]} this configuration gives it, "
            "and the bridge plugin refuses a second IPv4 address unless forceAddress is set. Set forceAddress: true "
            "(the bridge then drops the old address, so attachments still on the old subnet lose their gateway "
            f"until they are replaced too), or detach everything from {name} and delete the bridge first")


def host_device(plugin: dict) -> tuple:
    """Every network on one bridge shares it, and the bridge holds the gateway of each."""
    return "bridge", plugin.get("bridge") or DEFAULT_BRIDGE


RULES = PluginRules(
    SCHEMA, check, creates_interface=True, add_blocker=add_blocker, check_defects=(MAC_MOVED, ROUTE_WITHOUT_GW),
    host_device=host_device,
    added_in={"macspoofchk": "1.1.0", "enabledad": "1.1.0", "vlanTrunk": "1.3.0", "preserveDefaultVlan": "1.3.0",
              "disableContainerInterface": "1.4.1", "ipMasqBackend": "1.6.0", "portIsolation": "1.7.0"},
)
