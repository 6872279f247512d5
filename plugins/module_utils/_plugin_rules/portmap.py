# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""portmap (plugins/meta/portmap): host port forwarding with iptables or nftables."""

from __future__ import annotations

import re

from .._schemas import DEFS, plugin_schema
from ._common import KnownCheckDefect, PluginRules, map_of

SCHEMA = plugin_schema(
    {
        "backend": DEFS["backend_ip"], "snat": DEFS["bool"], "masqAll": DEFS["bool"],
        "markMasqBit": {"type": "integer", "minimum": 0, "maximum": 31},
        "externalSetMarkChain": DEFS["string"],
        "conditionsV4": DEFS["strings"], "conditionsV6": DEFS["strings"],
    },
    {"not": {"required": ["markMasqBit", "externalSetMarkChain"]},
     "x-message": "cannot specify externalSetMarkChain and markMasqBit"},
)


def _conditions_style(conditions) -> str | None:
    if isinstance(conditions, list) and conditions and isinstance(conditions[0], str) and conditions[0]:
        return "iptables" if conditions[0][0] in "-!" else "nftables"
    return None


def check(plugin: dict, ctx) -> None:
    if map_of(plugin.get("capabilities")).get("portMappings") is not True:
        ctx.warn(["capabilities"], "has no portMappings: true, so the runtime never passes port mappings and portmap does nothing")
    backend = plugin.get("backend")
    for key in ("conditionsV4", "conditionsV6"):
        style = _conditions_style(plugin.get(key))
        if style == "nftables" and backend != "nftables":
            ctx.refused_from("1.6.0", [key], "holds nftables-style conditions, which need backend: nftables", plugin[key])
            if ctx.releases is not None and ctx.releases.before("1.6.0"):
                ctx.warn([key], "holds nftables-style conditions, but this release passes conditions to iptables, "
                         "which rejects them once a port mapping arrives", plugin[key], of_host=True)
        elif style == "iptables" and backend == "nftables":
            ctx.refused_from("1.6.0", [key], "holds iptables-style conditions, which the nftables backend cannot use", plugin[key])
    if backend == "nftables" and "externalSetMarkChain" in plugin:
        ctx.refused_from("1.6.0", ["externalSetMarkChain"], "is iptables-only and cannot be used with backend: nftables",
                         plugin["externalSetMarkChain"])


IPV6_CHECK = KnownCheckDefect(
    "portmap-ipv6-check", re.compile("could not check ipv6 dnat"),
    "portmap up to v1.1.x checks IPv6 rules it never created (containernetworking/plugins#819)", fixed_in="1.2.0")

RULES = PluginRules(SCHEMA, check, chained=True, added_in={"masqAll": "1.2.0", "backend": "1.6.0"},
                    check_defects=(IPV6_CHECK,))
