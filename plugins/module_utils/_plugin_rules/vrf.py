# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""vrf (plugins/meta/vrf): puts the container interface into a VRF."""

from __future__ import annotations

from .._schemas import DEFS, plugin_schema
from ._common import PluginRules

SCHEMA = plugin_schema(
    {"vrfname": DEFS["ifname"], "table": DEFS["uint32"]},
    {"required": ["vrfname"], "x-message": "vrfname is required (the VRF to create or join)"},
)

RULES = PluginRules(SCHEMA, min_spec="0.3.1", chained=True)
