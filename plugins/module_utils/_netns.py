# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Named network namespaces (``/var/run/netns/<name>``) and what is inside them, through
pyroute2. pyroute2 costs ~200 ms to import, so it is imported only by the functions that
need it."""

from __future__ import annotations

import os

from ._errors import CNIError
from ._identifiers import NETNS_DIR, NETNS_DIRS, check_netns_name, netns_path


class NetnsError(CNIError):
    """A namespace operation the kernel refused."""


def is_netns(path: str) -> bool:
    """True when ``path`` is a live namespace: a named one is a bind mount, not a bare file."""
    if not os.path.exists(path):
        return False
    if os.path.dirname(path) in NETNS_DIRS:
        return os.path.ismount(path)
    return True


def is_live(path: str) -> bool | None:
    """Whether the namespace at ``path`` exists; None for "" (nothing names one, so no evidence
    either way). An attachment's namespace counts as gone only on False."""
    return is_netns(path) if path else None


def exists(name: str) -> bool:
    return is_netns(netns_path(check_netns_name(name)))


def list_named() -> list:
    """Names of the live named namespaces, sorted."""
    try:
        names = os.listdir(NETNS_DIR)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if is_netns(os.path.join(NETNS_DIR, n)))


def create(name: str) -> bool:
    """Create the named namespace; False if it already existed (exact name match)."""
    check_netns_name(name)
    if exists(name):
        return False
    from pyroute2 import netns  # pylint: disable=import-outside-toplevel

    path = netns_path(name)
    if os.path.exists(path):  # a stale file left without its mount: ip netns add fails on it too
        os.unlink(path)
    try:
        netns.create(name)
    except OSError as exc:
        raise NetnsError(f"cannot create network namespace {name}: {exc}") from exc
    return True


def remove(name: str) -> bool:
    """Remove the named namespace; False if there was none."""
    check_netns_name(name)
    path = netns_path(name)
    if not os.path.exists(path):
        return False
    from pyroute2 import netns  # pylint: disable=import-outside-toplevel

    try:
        netns.remove(name)
    except OSError as exc:
        raise NetnsError(f"cannot remove network namespace {name}: {exc}") from exc
    return True


def interface_exists(netns: str, ifname: str) -> bool:
    """Whether ``ifname`` exists in the namespace at path ``netns``; False when the path is no
    namespace that can be entered (whatever then uses it reports that)."""
    if not is_netns(netns):
        return False
    from pyroute2 import NetNS  # pylint: disable=import-outside-toplevel

    try:
        with NetNS(netns, flags=0) as ns:
            return bool(ns.link_lookup(ifname=ifname))
    except OSError:
        return False  # removed since is_netns looked, or a file that is no namespace


def interfaces(netns: str) -> list:
    """The links inside a namespace (name or path) with their MAC, MTU, state and addresses."""
    from pyroute2 import NetNS  # pylint: disable=import-outside-toplevel

    path = netns_path(netns)
    try:
        with NetNS(path, flags=0) as ns:  # flags=0: never create a namespace by accident
            addresses = {}
            for addr in ns.get_addr():
                addresses.setdefault(addr["index"], []).append(
                    f"{addr.get_attr('IFA_ADDRESS')}/{addr['prefixlen']}")
            return [{
                "ifname": link.get_attr("IFLA_IFNAME"),
                "mac": link.get_attr("IFLA_ADDRESS"),
                "mtu": link.get_attr("IFLA_MTU"),
                "state": link.get_attr("IFLA_OPERSTATE"),
                "addresses": addresses.get(link["index"], []),
            } for link in ns.get_links()]
    except FileNotFoundError:
        raise NetnsError(f"network namespace {netns} does not exist") from None
