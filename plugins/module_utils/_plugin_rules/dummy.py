# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""dummy (plugins/main/dummy, v1.2.0+): a dummy interface holding the IPAM's addresses."""

from __future__ import annotations

from .._schemas import plugin_schema, requires_ipam_type
from ._common import PluginRules

RULES = PluginRules(plugin_schema({}, requires_ipam_type("dummy")), creates_interface=True)
