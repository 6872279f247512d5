# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""sbr (plugins/meta/sbr): source-based routing for the container's addresses."""

from __future__ import annotations

import ipaddress

from .._schemas import DEFS, plugin_schema
from ._common import UNRELEASED, PluginRules, is_ip

SCHEMA = plugin_schema({
    "table": DEFS["int"],
    "gateways": {"type": "array", "items": DEFS["ip"], "allOf": [
        {"maxItems": 2, "x-message": "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)"}]},
    "addSourceHints": DEFS["bool"],
})


def check(plugin: dict, ctx) -> None:
    gateways = plugin.get("gateways")
    if isinstance(gateways, list):
        families = [ipaddress.ip_address(g).version for g in gateways if is_ip(g)]
        if len(families) != len(set(families)):
            ctx.refused_from(UNRELEASED, ["gateways"],
                             "holds two gateways of one IP family; give one IPv4 and one IPv6 at most", gateways)


RULES = PluginRules(SCHEMA, check, chained=True,
                    added_in={"table": "1.6.0", "gateways": UNRELEASED, "addSourceHints": UNRELEASED})
