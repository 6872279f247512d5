# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""macvlan (plugins/main/macvlan): a macvlan link on a host interface."""

from __future__ import annotations

from .._schemas import DEFS, plugin_schema
from ._common import PluginRules, check_mac, check_master_mtu, check_mtu
from .ipvlan import warn_default_master

SCHEMA = plugin_schema({
    "master": DEFS["ifname"], "mode": {"enum": ["bridge", "private", "vepa", "passthru", ""]},
    "mtu": DEFS["uint"], "mac": DEFS["mac"], "bcqueuelen": DEFS["uint32"],
    "linkInContainer": DEFS["bool"],
})


def check(plugin: dict, ctx) -> None:
    warn_default_master(plugin, ctx)
    check_mtu(plugin, ctx)
    check_master_mtu(plugin, ctx)
    check_mac(plugin, ctx)


RULES = PluginRules(SCHEMA, check, creates_interface=True, added_in={"linkInContainer": "1.3.0", "bcqueuelen": "1.6.0"})
