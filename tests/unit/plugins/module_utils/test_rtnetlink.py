# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rtnetlink messages as bytes, without the kernel (tests/functional/test_routes_real.py
sends them to the real one): a request's layout, and a route and an error read back."""

from __future__ import annotations

import ipaddress
import socket
import struct

from ansible_collections.cnikit.cni.plugins.module_utils import _rtnetlink as rtnl
from ansible_collections.cnikit.cni.plugins.module_utils._rtnetlink import RouteRequest


def attributes(body: bytes) -> dict:
    return dict(rtnl._attrs(body, rtnl.RTMSG.size, len(body)))  # pylint: disable=protected-access


def test_a_route_in_a_table_past_255_names_it_in_rta_table():
    request = RouteRequest(dst=ipaddress.ip_network("10.244.1.0/24"), type=1, protocol=210, table=1000, metric=7,
                           gateway=ipaddress.ip_address("10.199.0.12"), oif=3)
    body = rtnl._route_body(request, rtnl.RT_SCOPE_UNIVERSE)  # pylint: disable=protected-access
    family, dst_len, _src, _tos, table, protocol, scope, rtype, _flags = rtnl.RTMSG.unpack_from(body)
    assert (family, dst_len, table, protocol, scope, rtype) == (socket.AF_INET, 24, rtnl.RT_TABLE_COMPAT, 210, 0, 1)
    attrs = attributes(body)
    assert struct.unpack("=I", attrs[rtnl.RTA_TABLE]) == (1000,)
    assert attrs[rtnl.RTA_DST] == bytes([10, 244, 1, 0])
    assert attrs[rtnl.RTA_GATEWAY] == bytes([10, 199, 0, 12])
    assert struct.unpack("=I", attrs[rtnl.RTA_PRIORITY]) == (7,)
    assert struct.unpack("=I", attrs[rtnl.RTA_OIF]) == (3,)


def test_a_default_route_carries_no_destination():
    request = RouteRequest(dst=ipaddress.ip_network("::/0"), type=7, protocol=210, table=254, metric=1024)
    attrs = attributes(rtnl._route_body(request, rtnl.RT_SCOPE_UNIVERSE))  # pylint: disable=protected-access
    assert rtnl.RTA_DST not in attrs and rtnl.RTA_GATEWAY not in attrs and rtnl.RTA_OIF not in attrs


def test_a_route_message_reads_back_as_the_route():
    request = RouteRequest(dst=ipaddress.ip_network("fd00:244::/64"), type=1, protocol=210, table=1000, metric=1024,
                           gateway=ipaddress.ip_address("fd01::12"), oif=5)
    body = rtnl._route_body(request, rtnl.RT_SCOPE_UNIVERSE)  # pylint: disable=protected-access
    route = rtnl.parse_route(body, 0, len(body))
    assert route == rtnl.KernelRoute(dst=request.dst, type=1, protocol=210, table=1000, metric=1024,
                                     gateway=request.gateway, oif=5)
    assert rtnl.parse_route(body, 0, len(body), table=254) is None


def test_an_error_reads_back_with_the_kernels_explanation():
    explanation = b"Nexthop has invalid gateway\0"
    tlv = rtnl._attr(rtnl.NLMSGERR_ATTR_MSG, explanation)  # pylint: disable=protected-access
    body = struct.pack("=i", -101) + rtnl.NLMSGHDR.pack(64, rtnl.RTM_NEWROUTE, 0, 9, 0) + tlv
    code, text = rtnl._error(body, 0, len(body), rtnl.NLM_F_CAPPED | rtnl.NLM_F_ACK_TLVS)  # pylint: disable=protected-access
    assert (code, text) == (101, "Nexthop has invalid gateway")
    assert str(rtnl.NetlinkError(code, text)) == "[Errno 101] Network is unreachable (Nexthop has invalid gateway)"


def test_an_acknowledgement_is_error_zero():
    body = struct.pack("=i", 0) + rtnl.NLMSGHDR.pack(16, rtnl.RTM_DELROUTE, 0, 3, 0)
    assert rtnl._error(body, 0, len(body), rtnl.NLM_F_CAPPED) == (0, "")  # pylint: disable=protected-access
