# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""IPAM static (plugins/ipam/static): the addresses written in the configuration."""

from __future__ import annotations

import ipaddress

from .._schemas import DEFS
from ._common import PluginRules, check_routes, is_ip, list_of, map_of, parse_cidr

SCHEMA = {
    "type": "object",
    "properties": {
        "type": DEFS["string"],
        "addresses": {"type": "array", "items": {
            "type": "object", "required": ["address"],
            "properties": {"address": DEFS["cidr"], "gateway": DEFS["ip"]},
        }},
        "routes": DEFS["routes"],
        "dns": DEFS["dns"],
    },
}


def check(plugin: dict, ctx) -> None:
    ipam = map_of(plugin.get("ipam"))
    addresses = list_of(ipam.get("addresses"))
    runtime_ips = map_of(plugin.get("capabilities")).get("ips") is True or "ips" in map_of(map_of(plugin.get("args")).get("cni"))
    if not addresses and not runtime_ips and isinstance(ipam.get("addresses", []), list):
        ctx.error(["ipam", "addresses"], "holds no address, and no ips capability or args.cni.ips supplies one: "
                  "the plugin fails 'IPAM plugin returned missing IP config'")
    families = []
    networks = []
    gateways = {}
    for index, entry in enumerate(addresses):
        if not isinstance(entry, dict):
            continue
        iface = parse_cidr(entry.get("address"))
        if iface is None:
            continue
        families.append(iface.version)
        networks.append(iface.network)
        gateway = entry.get("gateway")
        if is_ip(gateway):
            gateways.setdefault(iface.version, gateway)
            if ipaddress.ip_address(gateway) not in iface.network:
                ctx.warn(["ipam", "addresses", index, "gateway"], f"is outside the address's subnet {iface.network}", gateway)
    if ctx.version and not ctx.version_at_least("0.3.0") and len(families) != len(set(families)):
        ctx.report.error("cniVersion", f"{ctx.version} does not support more than 1 address per family; use 0.3.0 or newer",
                         ctx.version)
    check_routes(ipam.get("routes"), ["ipam", "routes"], [] if runtime_ips else networks, ctx, gateways)


RULES = PluginRules(SCHEMA, check)
