# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The reference plugins' names, without their rules, for what needs only names: the installer
(the binaries it lets into the set ``reference``) and the engine's CHECK (which types may have it
withheld) then import none of the eighteen rule files and their schemas. ``registry.py`` names
each plugin's rules by these names; a unit test holds the two equal."""

from __future__ import annotations

# The binaries of the reference plugins' release (cni_plugin_install's set "reference").
REFERENCE_PLUGINS = frozenset({
    "bridge", "ipvlan", "macvlan", "ptp", "host-device", "vlan", "loopback", "dummy", "tap", "vrf", "tuning",
    "portmap", "bandwidth", "firewall", "sbr", "host-local", "static", "dhcp",
})
# The plugin and IPAM types with a CHECK defect that withholds CHECK (``KnownCheckDefect.withheld``):
# a CHECK of a plugin that runs none of them sends it without asking the rules.
WITHHELD_CHECK_TYPES = frozenset({"dhcp"})
