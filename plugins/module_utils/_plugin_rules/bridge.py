# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""bridge (plugins/main/bridge): a Linux bridge and a veth pair per container."""

from __future__ import annotations

from .._netns import host_ipv4_address
from .._schemas import DEFS, VLAN_ID, not_both_true, plugin_schema
from ._common import PluginRules, check_mtu, is_int, list_of, map_of

DEFAULT_BRIDGE = "cni0"  # the bridge's name when the configuration names none
TRUNK_ID = {"type": "integer"}  # 1..4094, checked with the release that reads vlanTrunk

SCHEMA = plugin_schema(
    {
        "bridge": DEFS["ifname"], "isGateway": DEFS["bool"], "isDefaultGateway": DEFS["bool"],
        "forceAddress": DEFS["bool"], "ipMasq": DEFS["bool"], "ipMasqBackend": DEFS["backend_ip"],
        "mtu": DEFS["uint"], "hairpinMode": DEFS["bool"], "promiscMode": DEFS["bool"],
        "vlan": VLAN_ID,
        "vlanTrunk": {"type": "array", "items": {
            "type": "object", "properties": {"minID": TRUNK_ID, "maxID": TRUNK_ID, "id": TRUNK_ID}}},
        "preserveDefaultVlan": DEFS["bool"], "macspoofchk": DEFS["bool"], "enabledad": DEFS["bool"],
        "disableContainerInterface": DEFS["bool"], "portIsolation": DEFS["bool"],
    },
    not_both_true("hairpinMode", "promiscMode", "cannot set hairpinMode and promiscMode at the same time"),
)


def _check_trunk(index: int, trunk: dict, ctx) -> None:
    where = ["vlanTrunk", index]
    for key in ("minID", "maxID", "id"):
        value = trunk.get(key)
        if is_int(value) and not 1 <= value <= 4094:
            ctx.since("1.3.0", where + [key], "must be a VLAN ID from 1 to 4094", value)
    if ("minID" in trunk) != ("maxID" in trunk):
        missing = "maxID" if "minID" in trunk else "minID"
        ctx.since("1.3.0", where + [missing], "is required: minID and maxID must be configured together")
    elif is_int(trunk.get("minID")) and is_int(trunk.get("maxID")) and trunk["minID"] > trunk["maxID"]:
        ctx.since("1.3.0", where, "minID is greater than maxID", trunk)


def check(plugin: dict, ctx) -> None:
    for index, trunk in enumerate(list_of(plugin.get("vlanTrunk"))):
        if isinstance(trunk, dict):
            _check_trunk(index, trunk, ctx)
    ipam_type = map_of(plugin.get("ipam")).get("type")
    if plugin.get("disableContainerInterface") is True and ipam_type:
        ctx.since("1.4.1", ["disableContainerInterface"], "cannot use IPAM when disableContainerInterface is set", True)
    if plugin.get("ipMasq") is True and not ipam_type:
        ctx.warn(["ipMasq"], "has no effect without an IPAM section with a type")
    check_mtu(plugin, ctx)


def add_blocker(plugin: dict, ipam_gateways) -> str | None:
    """A gateway bridge that already holds another IPv4 address: the plugin refuses to add a
    second one unless ``forceAddress`` is set (ensureAddr), so after a subnet change every ADD
    on this host fails until the bridge's old address is gone."""
    gateway_mode = plugin.get("isGateway") is True or plugin.get("isDefaultGateway") is True
    if not gateway_mode or plugin.get("forceAddress") is True or not ipam_gateways:
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


RULES = PluginRules(
    SCHEMA, check, creates_interface=True, add_blocker=add_blocker,
    since={"macspoofchk": "1.1.0", "enabledad": "1.1.0", "vlanTrunk": "1.3.0", "preserveDefaultVlan": "1.3.0",
           "disableContainerInterface": "1.4.1", "ipMasqBackend": "1.6.0", "portIsolation": "1.7.0"},
)
