# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""ipvlan (plugins/main/ipvlan): an ipvlan link on a host interface."""

from __future__ import annotations

from .._schemas import DEFS, plugin_schema
from ._common import PluginRules, check_master_mtu, check_mtu, map_of

SCHEMA = plugin_schema({
    "master": DEFS["ifname"], "mode": {"enum": ["l2", "l3", "l3s", ""]}, "mtu": DEFS["uint"],
    "linkInContainer": DEFS["bool"],
})


def warn_default_master(plugin: dict, ctx) -> None:
    if "master" not in plugin:
        ctx.warn(["master"], "is not set: the plugin uses the interface of the default route, and fails on hosts without one")


def check(plugin: dict, ctx) -> None:
    if ctx.position == 0 and not map_of(plugin.get("ipam")).get("type"):
        ctx.error(["ipam"], "ipvlan needs an IPAM section with a type unless it is chained after a plugin that returns IPs")
    warn_default_master(plugin, ctx)
    check_mtu(plugin, ctx)
    check_master_mtu(plugin, ctx)


def _chained_without_ipam(position: int, ipam_type) -> bool:
    """Chained without IPAM, ipvlan takes the previous plugin's interface as its master."""
    return position > 0 and not ipam_type


RULES = PluginRules(SCHEMA, check, creates_interface=True, reuses_interface=_chained_without_ipam,
                    added_in={"linkInContainer": "1.3.0"})
