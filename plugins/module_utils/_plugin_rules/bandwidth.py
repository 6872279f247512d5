# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""bandwidth (plugins/meta/bandwidth): tbf qdiscs on the host end of a veth."""

from __future__ import annotations

from .._schemas import BURST_LIMIT_BITS, DEFS, plugin_schema, together
from ._common import PluginRules, is_int

BURST = {"type": "integer", "minimum": 0,
         "allOf": [{"maximum": BURST_LIMIT_BITS, "x-message": "burst cannot be more than 4GB"}]}
SCHEMA = plugin_schema(
    {
        "ingressRate": DEFS["uint64"], "egressRate": DEFS["uint64"],
        "ingressBurst": BURST, "egressBurst": BURST,
        "shapedSubnets": {"type": "array", "items": DEFS["cidr"]},
        "unshapedSubnets": {"type": "array", "items": DEFS["cidr"]},
    },
    together("ingressRate", "ingressBurst", "if rate is set, burst must also be set"),
    together("ingressBurst", "ingressRate", "if burst is set, rate must also be set"),
    together("egressRate", "egressBurst", "if rate is set, burst must also be set"),
    together("egressBurst", "egressRate", "if burst is set, rate must also be set"),
)
VETH_PLUGINS = ("bridge", "ptp")


def check(plugin: dict, ctx) -> None:
    # The plugin hands the kernel bytes (rate / 8, burst / 8): below 8 bits that is 0 and the
    # kernel refuses the qdisc ('create qdisc: invalid argument').
    for key in ("ingressRate", "ingressBurst", "egressRate", "egressBurst"):
        value = plugin.get(key)
        if is_int(value) and 0 < value < 8:
            ctx.error([key], "is below 8 bits: the plugin passes the kernel whole bytes, 0 here, and the kernel "
                      "refuses the qdisc", value)
    previous = ctx.previous_main
    if previous is not None and previous not in VETH_PLUGINS:
        ctx.warn(["type"], f"bandwidth shapes veth pairs only; after {previous} it fails with 'no veth peer'", "bandwidth")


RULES = PluginRules(SCHEMA, check, min_spec="0.3.0", chained=True,
                    removed_in={"shapedSubnets": "1.6.0", "unshapedSubnets": "1.6.0"})
