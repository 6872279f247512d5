# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Kernel routes over rtnetlink (rtnetlink(7)), in batches: the route messages the route
reconciler needs (dump, get, add, replace, delete), written and read with ``struct``.

Why not pyroute2, as the rest of the collection: a reconcile of 1,000 peers' routes asks the
kernel 2,000 times (a ``route get`` for each gateway, then the changes); pyroute2 sends one
request and waits for its answer each time, 0.35 to 0.8 ms a request depending on its version
(0.7.2 to 0.9.7), so 1,000 peers took 0.9 to 1.6 s before the 0.2 s of importing it. Here the
requests of a batch go to the kernel in a few writes and their answers are read together, so
the same reconcile takes milliseconds. It also spares the floor releases' quirks (pyroute2 0.5
and 0.6 send a route delete with NLM_F_CREATE|NLM_F_EXCL, which Linux 6 refuses)."""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass

NETLINK_ROUTE = 0
SOL_NETLINK = 270
NETLINK_CAP_ACK = 10  # errors carry the failed request's header only, not its whole body
NETLINK_EXT_ACK = 11  # errors carry the kernel's explanation ("Nexthop has invalid gateway")

NLMSG_ERROR = 2
NLMSG_DONE = 3
RTM_NEWROUTE = 24
RTM_DELROUTE = 25
RTM_GETROUTE = 26

NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_DUMP_INTR = 0x10
NLM_F_DUMP = 0x300
NLM_F_REPLACE = 0x100
NLM_F_EXCL = 0x200
NLM_F_CREATE = 0x400
NLM_F_CAPPED = 0x100  # on an NLMSG_ERROR: the failed request's header only, without its body
NLM_F_ACK_TLVS = 0x200  # on an NLMSG_ERROR: extended-ack attributes follow
NLMSGERR_ATTR_MSG = 1

RTA_DST = 1
RTA_OIF = 4
RTA_GATEWAY = 5
RTA_PRIORITY = 6
RTA_TABLE = 15

RTN_UNICAST = 1
RT_TABLE_COMPAT = 252  # rtm_table of a route whose table number does not fit a byte (RTA_TABLE holds it)
RT_SCOPE_UNIVERSE = 0
RT_SCOPE_LINK = 253
RT_SCOPE_NOWHERE = 255
RTM_F_CLONED = 0x200
RTNH_F_ONLINK = 0x4  # in rtm_flags: the gateway is taken as on the link of the output interface

NLMSGHDR = struct.Struct("=IHHII")
RTMSG = struct.Struct("=BBBBBBBBI")
RTATTR = struct.Struct("=HH")
U32 = struct.Struct("=I")
ERROR_CODE = struct.Struct("=i")

# Requests written before their answers are read: each answer is under 200 bytes, so a batch's
# answers stay well inside the socket's receive buffer (the kernel drops what does not fit).
BATCH = 256
DUMP_ATTEMPTS = 5


class NetlinkError(OSError):
    """The kernel refused a request: its errno, and its explanation when it gave one."""

    def __init__(self, code: int, explanation: str = ""):
        text = os.strerror(code) + (f" ({explanation})" if explanation else "")
        super().__init__(code, text)


@dataclass(frozen=True)
class KernelRoute:
    """A route as the kernel reports it (the fields the reconciler uses)."""

    dst: object  # ipaddress network
    type: int
    protocol: int
    table: int
    metric: int
    gateway: object = None  # ipaddress address, or None
    oif: int = 0  # 0: no output interface
    cloned: bool = False
    onlink: bool = False


@dataclass(frozen=True)
class RouteAnswer:
    """What ``ip route get`` answers: the route's type, its gateway (None for an on-link
    destination) and its output interface."""

    type: int
    gateway: object
    oif: int


@dataclass(frozen=True)
class RouteRequest:
    """A route to add, replace or delete: the message's fields, interface by index."""

    dst: object
    type: int
    protocol: int
    table: int
    metric: int
    gateway: object = None
    oif: int = 0
    onlink: bool = False


def _attr(kind: int, payload: bytes) -> bytes:
    header = RTATTR.pack(RTATTR.size + len(payload), kind)
    return header + payload + b"\0" * (-len(payload) % 4)


def _attrs(data: bytes, offset: int, end: int):
    """(kind, payload) of each attribute in data[offset:end]."""
    while offset + RTATTR.size <= end:
        length, kind = RTATTR.unpack_from(data, offset)
        if length < RTATTR.size:
            return
        # The kind without its flags (NLA_F_NESTED, NLA_F_NET_BYTEORDER).
        yield kind & 0x3FFF, bytes(data[offset + RTATTR.size:offset + length])
        offset += (length + 3) & ~3


def _family(network) -> int:
    return socket.AF_INET if network.version == 4 else socket.AF_INET6


def _route_body(request: RouteRequest, scope: int) -> bytes:
    table_byte = request.table if request.table < 256 else RT_TABLE_COMPAT
    body = RTMSG.pack(_family(request.dst), request.dst.prefixlen, 0, 0, table_byte, request.protocol, scope,
                      request.type, RTNH_F_ONLINK if request.onlink else 0)
    body += _attr(RTA_TABLE, U32.pack(request.table))
    if request.dst.prefixlen:
        body += _attr(RTA_DST, request.dst.network_address.packed)
    body += _attr(RTA_PRIORITY, U32.pack(request.metric))
    if request.gateway is not None:
        body += _attr(RTA_GATEWAY, request.gateway.packed)
    if request.oif:
        body += _attr(RTA_OIF, U32.pack(request.oif))
    return body


def _route_fields(data, offset: int, end: int) -> tuple:
    """(rtmsg header fields, {attribute kind: payload}) of an RTM_NEWROUTE message body."""
    header = RTMSG.unpack_from(data, offset)
    return header, dict(_attrs(data, offset + RTMSG.size, end))


def _address(payload) -> object:
    return ipaddress.ip_address(bytes(payload))


def parse_route(data, offset: int, end: int, table: int | None = None) -> KernelRoute | None:
    """The route of an RTM_NEWROUTE message body; None for a family other than IPv4 and IPv6,
    or a table other than ``table`` when given (checked before the addresses are decoded)."""
    (family, dst_len, _src_len, _tos, table_byte, protocol, _scope, rtype, flags), attrs = \
        _route_fields(data, offset, end)
    if family not in (socket.AF_INET, socket.AF_INET6):
        return None
    route_table = U32.unpack(attrs[RTA_TABLE])[0] if RTA_TABLE in attrs else table_byte
    if table is not None and route_table != table:
        return None
    network = ipaddress.IPv4Network if family == socket.AF_INET else ipaddress.IPv6Network
    dst = int.from_bytes(attrs[RTA_DST], "big") if RTA_DST in attrs else 0
    return KernelRoute(
        dst=network((dst, dst_len)), type=rtype, protocol=protocol, table=route_table,
        metric=U32.unpack(attrs[RTA_PRIORITY])[0] if RTA_PRIORITY in attrs else 0,
        gateway=_address(attrs[RTA_GATEWAY]) if RTA_GATEWAY in attrs else None,
        oif=U32.unpack(attrs[RTA_OIF])[0] if RTA_OIF in attrs else 0, cloned=bool(flags & RTM_F_CLONED),
        onlink=bool(flags & RTNH_F_ONLINK))


def parse_answer(data, offset: int, end: int) -> RouteAnswer:
    """``ip route get``'s answer, without decoding the destination it repeats."""
    header, attrs = _route_fields(data, offset, end)
    return RouteAnswer(type=header[7], gateway=_address(attrs[RTA_GATEWAY]) if RTA_GATEWAY in attrs else None,
                       oif=U32.unpack(attrs[RTA_OIF])[0] if RTA_OIF in attrs else 0)


def _error(data: bytes, offset: int, end: int, flags: int) -> tuple:
    """(errno, explanation) of an NLMSG_ERROR body; errno 0 is an acknowledgement."""
    code = -ERROR_CODE.unpack_from(data, offset)[0]
    explanation = ""
    if flags & NLM_F_ACK_TLVS:
        request_size = NLMSGHDR.size if flags & NLM_F_CAPPED else NLMSGHDR.unpack_from(data, offset + ERROR_CODE.size)[0]
        for kind, payload in _attrs(data, offset + ERROR_CODE.size + ((request_size + 3) & ~3), end):
            if kind == NLMSGERR_ATTR_MSG:
                explanation = payload.rstrip(b"\0").decode("utf-8", "replace")
    return code, explanation


class RouteSocket:
    """An rtnetlink socket of the calling thread's network namespace."""

    def __init__(self):
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE)
        for option in (NETLINK_CAP_ACK, NETLINK_EXT_ACK):
            try:
                self._sock.setsockopt(SOL_NETLINK, option, 1)
            except OSError:
                pass  # older kernels: errors without the explanation, or with the whole request
        self._sock.bind((0, 0))
        self._seq = 0
        # One buffer for every read: a dump's datagrams are at most a few pages, an answer one
        # message, and a fresh megabyte for each of a thousand answers would cost more than they do.
        self._buffer = bytearray(1 << 20)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()

    def _message(self, kind: int, flags: int, body: bytes) -> tuple:
        self._seq += 1
        return self._seq, NLMSGHDR.pack(NLMSGHDR.size + len(body), kind, flags, self._seq, 0) + body

    def _messages(self):
        """Each (kind, flags, seq, data, body offset, end) the socket receives, forever; ``data``
        is the socket's buffer, valid until the next message is asked for."""
        data = self._buffer
        while True:
            size = self._sock.recv_into(data)
            offset = 0
            while offset + NLMSGHDR.size <= size:
                length, kind, flags, seq, _pid = NLMSGHDR.unpack_from(data, offset)
                if length < NLMSGHDR.size:
                    break
                yield kind, flags, seq, data, offset + NLMSGHDR.size, offset + length
                offset += (length + 3) & ~3

    def dump(self, family: int, table: int) -> list:
        """Every route of the family in ``table`` (the kernel sends every table's without strict
        checking; the others are skipped); a dump the kernel marks as interrupted by a change is
        read again."""
        for _attempt in range(DUMP_ATTEMPTS):
            seq, message = self._message(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, RTMSG.pack(family, *[0] * 8))
            self._sock.sendall(message)
            routes, interrupted = [], False
            for kind, flags, got_seq, data, offset, end in self._messages():
                if got_seq != seq:
                    continue
                interrupted = interrupted or bool(flags & NLM_F_DUMP_INTR)
                if kind == NLMSG_DONE:
                    break
                if kind == NLMSG_ERROR:
                    raise NetlinkError(*_error(data, offset, end, flags))
                if kind == RTM_NEWROUTE:
                    route = parse_route(data, offset, end, table)
                    if route is not None:
                        routes.append(route)
            if not interrupted:
                return routes
        raise NetlinkError(errno.EAGAIN, "the routes kept changing while they were read")

    def get(self, addresses: list, oifs: list) -> list:
        """``ip route get`` of each address (through the interface index of the same position in
        ``oifs``, 0 for any): a RouteAnswer or a NetlinkError for each, in order."""
        bodies = []
        for address, oif in zip(addresses, oifs):
            size = 32 if address.version == 4 else 128
            family = socket.AF_INET if address.version == 4 else socket.AF_INET6
            body = RTMSG.pack(family, size, 0, 0, 0, 0, 0, 0, 0) + _attr(RTA_DST, address.packed)
            if oif:
                body += _attr(RTA_OIF, U32.pack(oif))
            bodies.append((RTM_GETROUTE, NLM_F_REQUEST, body))
        return self._batch(bodies)

    def change(self, operations: list) -> list:
        """Each ``(verb, RouteRequest)`` with verb ``add`` (refused if the route exists),
        ``replace`` or ``delete``: None or the NetlinkError of each, in order. The kernel
        carries out every request it accepts, whatever it refused before it."""
        kinds = {
            "add": (RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL),
            "replace": (RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE),
            "delete": (RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK),
        }
        bodies = []
        for verb, request in operations:
            if verb == "delete":
                scope = RT_SCOPE_NOWHERE  # as ip route del: any scope
            elif request.type == RTN_UNICAST and request.gateway is None:
                scope = RT_SCOPE_LINK  # a route on a link, as ip route add <dst> dev <if>
            else:
                scope = RT_SCOPE_UNIVERSE
            bodies.append((*kinds[verb], _route_body(request, scope)))
        answers = self._batch(bodies)
        return [None if answer is True else answer for answer in answers]

    def _batch(self, bodies: list) -> list:
        """Send the requests BATCH at a time; each answer in order: a RouteAnswer, True for an
        acknowledgement, or a NetlinkError."""
        answers = []
        for start in range(0, len(bodies), BATCH):
            messages = [self._message(*body) for body in bodies[start:start + BATCH]]
            pending = {seq: index for index, (seq, _message) in enumerate(messages)}
            chunk = [None] * len(messages)
            self._sock.sendall(b"".join(message for _seq, message in messages))
            for kind, flags, seq, data, offset, end in self._messages():
                index = pending.pop(seq, None)
                if index is None:
                    continue
                if kind == NLMSG_ERROR:
                    code, explanation = _error(data, offset, end, flags)
                    chunk[index] = NetlinkError(code, explanation) if code else True
                else:
                    chunk[index] = parse_answer(data, offset, end)
                if not pending:
                    break
            answers += chunk
        return answers
