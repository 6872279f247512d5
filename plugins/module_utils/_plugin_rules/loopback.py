# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""loopback (plugins/main/loopback): brings up ``lo`` (or whatever interface CNI_IFNAME names,
which must exist: every namespace has ``lo``, and containerd and CRI-O attach it as ``ifname:
lo``); no keys of its own."""

from __future__ import annotations

from .._schemas import plugin_schema
from ._common import PluginRules

RULES = PluginRules(plugin_schema({}), configures_existing_interface=True)
