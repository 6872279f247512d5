# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""tap (plugins/main/tap, v1.3.0+): a tap device in the container."""

from __future__ import annotations

from .._schemas import DEFS, plugin_schema
from ._common import PluginRules, check_mac, check_mtu

SCHEMA = plugin_schema({
    "mac": DEFS["mac"], "mtu": DEFS["uint"], "multiQueue": DEFS["bool"], "owner": DEFS["uint32"],
    "group": DEFS["uint32"], "selinuxContext": DEFS["string"], "bridge": DEFS["ifname"],
})


def check(plugin: dict, ctx) -> None:
    check_mtu(plugin, ctx)
    check_mac(plugin, ctx)


RULES = PluginRules(SCHEMA, check, creates_interface=True, added_in={"bridge": "1.4.0"})
