# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Layer 3: the network against the host's other networks (same name, overlapping subnets, one
host device holding the gateways of different subnets); every finding is the host's (of_host)."""

from __future__ import annotations

from .._conflist import libcni_order
from .._plugin_rules.registry import assigned_subnets, host_devices
from .._plugin_rules._common import list_of
from .report import ValidationReport


def check_host(conf: dict, own_subnets: list, source, other_networks, report: ValidationReport) -> None:
    name = conf.get("name")
    own_devices = host_devices(list_of(conf.get("plugins")))
    for other in other_networks:
        other_source = other.source or "(unnamed)"
        if source and other.source == source:
            continue
        if other.name == name:
            if source and libcni_order(other.source) < libcni_order(source):
                report.error("name", f"is already defined in {other_source}, which libcni reads first: "
                             "this file would be ignored", name, of_host=True)
            elif source:
                report.warn("name", f"is also defined in {other_source}; libcni reads this file first and "
                            "ignores that one", name, of_host=True)
            else:
                report.warn("name", f"is also defined in {other_source}", name, of_host=True)
            continue
        other_subnets = [s for p in other.plugins if isinstance(p, dict) for s in assigned_subnets(p)]
        for mine in own_subnets:
            for theirs in other_subnets:
                if mine.network.version == theirs.network.version and mine.network.overlaps(theirs.network):
                    report.error(mine.path, f"overlaps {theirs.network} of network '{other.name}' ({other_source})",
                                 str(mine.network), of_host=True)
        for (kind, device), theirs in host_devices(other.plugins).items():
            mine = own_devices.get((kind, device))
            if mine is not None and theirs and mine and mine != theirs:
                report.error("plugins", f"{kind} '{device}' is also used by network '{other.name}' ({other_source}) "
                             f"with other subnets ({', '.join(sorted(theirs))}); the {kind} cannot hold both gateways",
                             device, of_host=True)
