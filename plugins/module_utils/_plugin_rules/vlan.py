# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""vlan (plugins/main/vlan): an 802.1Q link on a host interface."""

from __future__ import annotations

from .._schemas import DEFS, VLAN_ID, plugin_schema, requires_ipam_type
from ._common import PluginRules, check_master_mtu, check_mtu

SCHEMA = plugin_schema(
    {"master": DEFS["ifname"], "vlanId": VLAN_ID, "mtu": DEFS["uint"], "linkInContainer": DEFS["bool"]},
    {"required": ["master"], "x-message": '"master" is required: the host interface to create the VLAN on'},
    requires_ipam_type("vlan"),
)


def check(plugin: dict, ctx) -> None:
    if "vlanId" not in plugin:
        ctx.warn(["vlanId"], "is not set: the plugin then creates VLAN 0")
    check_mtu(plugin, ctx)
    check_master_mtu(plugin, ctx)


RULES = PluginRules(SCHEMA, check, creates_interface=True, added_in={"linkInContainer": "1.3.0"})
