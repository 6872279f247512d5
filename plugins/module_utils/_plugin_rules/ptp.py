# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""ptp (plugins/main/ptp): a veth pair routed point-to-point through the host."""

from __future__ import annotations

from .._schemas import DEFS, only_while_true, plugin_schema, requires_ipam_type
from ._common import PluginRules, check_masq_backend, check_mtu, list_of, map_of

SCHEMA = plugin_schema(
    {"ipMasq": DEFS["bool"], "ipMasqBackend": DEFS["string"], "mtu": DEFS["uint"]},
    requires_ipam_type("ptp"),
    only_while_true("ipMasq", "ipMasqBackend", DEFS["backend_ip"]),
)


def check(plugin: dict, ctx) -> None:
    check_mtu(plugin, ctx)
    check_masq_backend(plugin, ctx)
    ipam = map_of(plugin.get("ipam"))
    if ipam.get("type") != "static":
        return
    _check_runtime_ips(plugin, ipam, ctx)
    # ptp puts each address's gateway on the host end; a nil gateway fails the ADD.
    for index, entry in enumerate(list_of(ipam.get("addresses"))):
        if isinstance(entry, dict) and "address" in entry and "gateway" not in entry:
            ctx.error(["ipam", "addresses", index, "gateway"], "is required with ptp: ptp puts the gateway on the "
                      "host end of the veth (without one the ADD fails 'numerical result out of range')")


RULES = PluginRules(SCHEMA, check, creates_interface=True, added_in={"ipMasqBackend": "1.6.0"})


def _check_runtime_ips(plugin: dict, ipam: dict, ctx) -> None:
    """Addresses the runtime passes through the ``ips`` capability replace static's
    ``addresses`` and carry no gateway, which ptp needs for each address."""
    if map_of(plugin.get("capabilities")).get("ips") is not True:
        return
    why = ("addresses the runtime passes through the ips capability replace static's addresses and carry no "
           "gateway, which ptp puts on the host end of the veth (the ADD fails 'numerical result out of range')")
    if list_of(ipam.get("addresses")):
        ctx.warn(["capabilities", "ips"], f"{why}: every ADD that is given ips fails", True)
    else:
        ctx.error(["capabilities", "ips"], f"{why}: with no addresses of its own, every ADD fails", True)
