# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""IPAM dhcp (plugins/ipam/dhcp): leases from a DHCP server through the dhcp daemon."""

from __future__ import annotations

from .._schemas import DEFS
from ._common import PluginRules

SCHEMA = {
    "type": "object",
    "properties": {
        "type": DEFS["string"],
        "daemonSocketPath": DEFS["string"],
        "request": {"type": "array", "items": {
            "type": "object",
            "properties": {"skipDefault": DEFS["bool"], "option": {"type": "string", "format": "dhcp-option"}},
        }},
        "provide": {"type": "array", "items": {
            "type": "object", "required": ["option"],
            "properties": {
                "option": {"type": "string", "format": "dhcp-option"},
                "value": {"type": "string", "allOf": [
                    {"maxLength": 255, "x-message": "value too long for option (255 characters at most)"}]},
                "fromArg": DEFS["string"],
            },
        }},
        "priority": DEFS["int"],
    },
}


def check(_plugin: dict, ctx) -> None:
    ctx.warn(["ipam", "type"], "the dhcp IPAM plugin needs its daemon running on the host ('dhcp daemon', unit cni-dhcp.socket)")


RULES = PluginRules(SCHEMA, check, since={"request": "1.1.0", "provide": "1.1.0", "priority": "1.6.0"})
