# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Adjacency, the test of flannel's host-gw: an address is adjacent (on a link of this host, so a
route can go straight to it) when the kernel's answer to ``ip route get <address>`` is a unicast
route without a gateway. cni_route checks its gateways with it, cni_underlay_info tells the
routed network which peers need VXLAN."""

from __future__ import annotations

RTN_UNICAST = 1
RTN_LOCAL = 2


def reason_not_adjacent(answer, interface_name) -> str:
    """Why ``ip route get``'s ``answer`` (a ``_rtnetlink.RouteAnswer`` or the OSError the kernel
    gave) shows an address that is not on a link of this host; "" when it is. ``interface_name``
    turns an interface index into its name."""
    if isinstance(answer, OSError):
        return f"ip route get: {answer.strerror}"
    if answer.type == RTN_LOCAL:
        return "ip route get answers a local route: it is an address of this host"
    if answer.type != RTN_UNICAST:
        return f"ip route get answers a route of type {answer.type}, not unicast"
    if answer.gateway is not None:
        return f"ip route get answers via {answer.gateway} dev {interface_name(answer.oif)}"
    return ""


def adjacency(netlink, addresses: list, interface_name) -> list:
    """The reason each address (ipaddress addresses, in order) is not adjacent, "" for each that
    is, asked of the kernel in one batch (``netlink``: a ``_rtnetlink.RouteSocket``)."""
    answers = netlink.get(list(addresses), [0] * len(addresses))
    return [reason_not_adjacent(answer, interface_name) for answer in answers]
