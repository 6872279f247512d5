# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""host-device (plugins/main/host-device): moves an existing host interface into the container."""

from __future__ import annotations

from .._schemas import DEFS, plugin_schema
from ._common import PluginRules

SELECTORS = ("device", "hwaddr", "kernelpath", "pciBusID")
SCHEMA = plugin_schema(
    {
        "device": DEFS["ifname"], "hwaddr": DEFS["mac"],
        "kernelpath": {"type": "string", "allOf": [
            {"pattern": "^/sys/devices/", "x-message": "must be absolute and begin with /sys/devices/"}]},
        "pciBusID": {"type": "string", "allOf": [
            {"pattern": "^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-7]$",
             "x-message": "must be a PCI address like 0000:00:1f.6"}]},
    },
    {
        "anyOf": [{"required": [key]} for key in SELECTORS] + [
            {"required": ["capabilities"],
             "properties": {"capabilities": {"required": ["deviceID"], "properties": {"deviceID": {"const": True}}}}},
        ],
        "x-message": 'specify either "device", "hwaddr", "kernelpath" or "pciBusID" (or the deviceID capability)',
    },
)


def check(plugin: dict, ctx) -> None:
    selectors = [k for k in SELECTORS if k in plugin]
    if len(selectors) > 1:
        ctx.warn([], f"several device selectors ({', '.join(selectors)}): only {selectors[0]} is used "
                 "(precedence device > hwaddr > kernelpath > pciBusID)")


RULES = PluginRules(SCHEMA, check, creates_interface=True)
