# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""IPAM dhcp (plugins/ipam/dhcp): leases from a DHCP server through the dhcp daemon."""

from __future__ import annotations

from .._host_reads import unix_socket_state
from .._schemas import DEFS
from ._common import KnownCheckDefect, PluginRules, map_of

# Where the daemon listens unless started with -socketpath (and the plugin asks unless the IPAM
# section names daemonSocketPath): the path of the reference plugins' cni-dhcp.socket unit.
DEFAULT_SOCKET = "/run/cni/dhcp.sock"

SCHEMA = {
    "type": "object",
    "properties": {
        "type": DEFS["string"],
        "daemonSocketPath": DEFS["string"],
        "request": {"type": "array", "items": {
            "type": "object",
            "properties": {"skipDefault": DEFS["bool"], "option": {"type": "string", "format": "dhcp-option"}},
        }},
        "provide": {"type": "array", "items": {
            "type": "object", "required": ["option"],
            "properties": {
                "option": {"type": "string", "format": "dhcp-option"},
                "value": {"type": "string", "allOf": [
                    {"maxLength": 255, "x-message": "value too long for option (255 characters at most)"}]},
                "fromArg": DEFS["string"],
            },
        }},
        "priority": DEFS["int"],
    },
}


def daemon_state(path: str | None = None) -> dict:
    """Whether a dhcp daemon is up on ``path`` (the default socket if None): the socket exists
    and accepts a connection (a socket file left by a daemon that died exists but refuses)."""
    path = path or DEFAULT_SOCKET
    present, accepting = unix_socket_state(path)
    return {"socket": path, "present": present, "accepting": accepting}


def check(plugin: dict, ctx) -> None:
    path = map_of(plugin.get("ipam")).get("daemonSocketPath")
    where = ["ipam", "daemonSocketPath"] if isinstance(path, str) and path else ["ipam", "type"]
    path = path if isinstance(path, str) and path else DEFAULT_SOCKET
    if not ctx.on_host:
        ctx.warn(where, f"the dhcp IPAM plugin needs its daemon listening on {path} on the host "
                        "('dhcp daemon', unit cni-dhcp.socket)", path)
        return
    present, accepting = ctx.on_host.unix_socket(path)
    if not accepting:
        found = "its socket accepts no connection: the daemon has stopped" if present else "no socket"
        ctx.warn(where, f"no dhcp daemon listens on {path} on this host ({found}): every ADD fails until one "
                        "runs ('dhcp daemon', unit cni-dhcp.socket; docs/user-guide.md, 'A DHCP network')", path,
                 of_host=True)


# Up to v1.1.1 the daemon answers CHECK as it answers ADD: it acquires a new lease, with a renewal
# loop of its own that holds the namespace open, and forgets the one it had, whose loop renews on,
# even after DEL; v1.2.0 (containernetworking/plugins#792, "Update Allocate method to reuse lease if
# present") wakes the existing lease instead.
LEASE_PER_CHECK = KnownCheckDefect(
    "dhcp-lease-per-check", None,
    "the dhcp daemon before v1.2.0 starts another lease for every CHECK and keeps renewing the one it forgets, "
    "even after DEL, until its file descriptors run out and every dhcp ADD on the host fails with 'too many "
    "open files' (containernetworking/plugins#792)", fixed_in="1.2.0", withheld=True)

RULES = PluginRules(SCHEMA, check, added_in={"request": "1.1.0", "provide": "1.1.0", "priority": "1.6.0"},
                    check_defects=(LEASE_PER_CHECK,), daemon_state=daemon_state)
