# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Every reference plugin's rules by plugin type. Each plugin's are in its own file of this
package: its JSON Schema and its checks side by side, with the releases that introduced its
keys. Adding a plugin means adding its file and naming it here. (The package's __init__.py
stays empty, as ansible-test asks of module_utils packages.)"""

from __future__ import annotations

from ._common import json_path, map_of
from . import (
    bandwidth, bridge, dhcp, dummy, firewall, host_device, host_local, ipvlan, loopback, macvlan, portmap, ptp, sbr,
    static, tap, tuning, vlan, vrf,
)

PLUGINS = {
    "bridge": bridge.RULES, "ipvlan": ipvlan.RULES, "macvlan": macvlan.RULES, "ptp": ptp.RULES,
    "host-device": host_device.RULES, "vlan": vlan.RULES, "loopback": loopback.RULES, "dummy": dummy.RULES,
    "tap": tap.RULES, "vrf": vrf.RULES, "tuning": tuning.RULES, "portmap": portmap.RULES,
    "bandwidth": bandwidth.RULES, "firewall": firewall.RULES, "sbr": sbr.RULES,
}
IPAM = {"host-local": host_local.RULES, "static": static.RULES, "dhcp": dhcp.RULES}

PLUGIN_SCHEMAS = {name: rules.schema for name, rules in PLUGINS.items()}
IPAM_SCHEMAS = {name: rules.schema for name, rules in IPAM.items()}


def _rules(table: dict, plugin_type) -> object:
    """The rules of a type taken from a configuration (which may hold any JSON value), or None."""
    return table.get(plugin_type) if isinstance(plugin_type, str) else None


def assigned_subnets(plugin: dict) -> list:
    """The subnets a plugin object's IPAM section allocates from, as far as the configuration
    tells (``Subnet``; empty for IPAM types that take their addresses from elsewhere)."""
    ipam = map_of(plugin.get("ipam"))
    rules = _rules(IPAM, ipam.get("type"))
    return rules.subnets(ipam) if rules is not None and rules.subnets else []


def host_devices(plugins: list) -> dict:
    """{(kind, name): frozenset of the subnets' texts} of the host devices these plugin objects
    put their attachments on (see ``PluginRules.host_device``)."""
    result = {}
    for plugin in plugins:
        rules = _rules(PLUGINS, plugin.get("type")) if isinstance(plugin, dict) else None
        if rules is not None and rules.host_device:
            result[rules.host_device(plugin)] = frozenset(str(s.network) for s in assigned_subnets(plugin))
    return result


def configures_existing_interface(plugins: list) -> bool:
    """Whether an ADD of these plugin objects configures the interface CNI_IFNAME names instead
    of creating it, so that the name being taken in the namespace is its precondition. The first
    plugin decides: it makes (or takes) the interface, and the plugins chained after it act on
    what it made."""
    rules = _rules(PLUGINS, plugins[0].get("type")) if plugins else None
    return rules is not None and rules.configures_existing_interface


def check_defects(plugin_type: str) -> tuple:
    """The known CHECK defects of released versions of a plugin type (KnownCheckDefect)."""
    rules = PLUGINS.get(plugin_type)
    return rules.check_defects if rules is not None else ()


def withheld_checks(plugin: dict) -> list:
    """``(binary type, KnownCheckDefect)`` of the defects for which CHECK is withheld (see
    ``KnownCheckDefect.withheld``) of a plugin object's binaries: its own and its IPAM's, which
    the plugin runs during its CHECK."""
    types = (plugin.get("type"), map_of(plugin.get("ipam")).get("type"))
    found = []
    for table, binary in zip((PLUGINS, IPAM), types):
        rules = _rules(table, binary)
        found += [(binary, d) for d in (rules.check_defects if rules is not None else ()) if d.withheld]
    return found


def honours_requested_ips(plugins: list) -> bool:
    """Whether an IPAM of these plugin objects hands out the addresses CNI_ARGS IP asks for."""
    for plugin in plugins:
        rules = _rules(IPAM, map_of(plugin.get("ipam")).get("type"))
        if rules is not None and rules.honours_requested_ips:
            return True
    return False


def reserved_addresses(plugins: list, network: str, container_id: str, ifname: str) -> list:
    """The addresses the IPAM sections of these plugin objects keep on the host for an
    attachment (see ``PluginRules.reserved_addresses``)."""
    found = []
    for plugin in plugins:
        ipam = map_of(plugin.get("ipam"))
        rules = _rules(IPAM, ipam.get("type"))
        if rules is not None and rules.reserved_addresses is not None:
            found += rules.reserved_addresses(ipam, network, container_id, ifname)
    return found


def _ipam_gateways(ipam: dict, ipam_rules) -> list | None:
    """Every gateway an IPAM section may hand out (see ``PluginRules.gateway_sets``), or None."""
    if ipam_rules is None or ipam_rules.gateway_sets is None:
        return None
    return [gateway for _parts, gateways in ipam_rules.gateway_sets(ipam) for gateway in gateways]


def daemon_states() -> dict:
    """{plugin type: the state of its daemon on this host} of the plugins that need one (see
    ``PluginRules.daemon_state``)."""
    return {name: rules.daemon_state() for table in (PLUGINS, IPAM) for name, rules in table.items()
            if rules.daemon_state is not None}


def add_blocker_findings(plugins: list) -> list:
    """Why an ADD of these plugin objects would fail on this host as it is now: (JSON path, plugin
    type, reason) for each plugin that says so (see ``PluginRules.add_blocker``)."""
    findings = []
    for index, plugin in enumerate(plugins):
        rules = _rules(PLUGINS, plugin.get("type"))
        if rules is None or rules.add_blocker is None:
            continue
        ipam = map_of(plugin.get("ipam"))
        ipam_rules = _rules(IPAM, ipam.get("type"))
        reason = rules.add_blocker(plugin, _ipam_gateways(ipam, ipam_rules))
        if reason:
            findings.append((json_path(["plugins", index]), plugin["type"], reason))
    return findings


def add_blockers(plugins: list) -> list:
    """The same, one line per plugin."""
    return [f"{path} ({plugin_type}): {reason}" for path, plugin_type, reason in add_blocker_findings(plugins)]
