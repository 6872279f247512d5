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

import ctypes
import errno
import fcntl
import ipaddress
import os
import socket
import stat
import struct
import threading

from ._errors import CNIError, ConfigError
from ._identifiers import NETNS_DIR, NETNS_DIRS, check_netns_name, netns_path


CLONE_NEWNET = 0x40000000  # setns(2): the descriptor must refer to a network namespace
# netdevice(7): an interface's primary IPv4 address and its netmask.
SIOCGIFADDR = 0x8915
SIOCGIFNETMASK = 0x891B
NS_GET_NSTYPE = 0xB703  # ioctl_ns(2): the type of namespace a descriptor refers to


class NetnsError(CNIError):
    """A namespace operation the kernel refused."""


def is_netns(path: str) -> bool:
    """True when ``path`` is a live namespace: a named one is a bind mount, not a bare file."""
    if not os.path.exists(path):
        return False
    if os.path.dirname(path) in NETNS_DIRS:
        return os.path.ismount(path)
    return True


def is_network_namespace(path: str) -> bool:
    """Whether ``path`` is a network namespace (a ``/var/run/netns`` bind mount,
    ``/proc/<pid>/ns/net``), not merely a file: the kernel says, through ioctl_ns(2). Only
    regular files are opened (a namespace looks like one), so no device or fifo is touched."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return fcntl.ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET
    except OSError:
        return False  # not a namespace file (ENOTTY)
    finally:
        os.close(fd)


# The module's own network namespace, and PID 1's: the host's, unless the module runs in a container.
OWN_NAMESPACES = (("/proc/self/ns/net", "the one the module itself runs in"),
                  ("/proc/1/ns/net", "the one PID 1 (the host's init) runs in"))


def host_namespace_of(path: str) -> str | None:
    """If the namespace at ``path`` is the host's own (the same st_dev and st_ino as one of
    OWN_NAMESPACES, whatever the path says), which one it is; None otherwise or when it cannot
    be told (no such file)."""
    try:
        given = os.stat(path)
    except OSError:
        return None
    for own_path, description in OWN_NAMESPACES:
        try:
            own = os.stat(own_path)
        except OSError:
            continue
        if (given.st_dev, given.st_ino) == (own.st_dev, own.st_ino):
            return description
    return None


def check_netns_file(path: str, option: str = "netns") -> str:
    """Refuse an existing file that is no network namespace, before it is handed to a plugin as
    one (a path that does not exist is left to the plugin, whose error says so)."""
    if os.path.lexists(path) and not is_network_namespace(path):
        raise ConfigError(option, "is not a network namespace; give a name under /var/run/netns or a namespace "
                          "path such as /proc/<pid>/ns/net", path)
    return path


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


def _probe_in(netns: str, probe, failed):
    """``probe()`` run in the namespace at path ``netns``; ``failed`` when the path is no
    namespace that can be entered, or the probe raises OSError.

    A short-lived thread joins the namespace and runs the probe: a thread's network namespace is
    its own, so the process stays where it is. This costs under a millisecond, where pyroute2's
    NetNS forks a helper (about 90 ms per ADD)."""
    if not is_netns(netns):
        return failed
    answer = []

    def run() -> None:
        try:
            fd = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(fd, CLONE_NEWNET)
            finally:
                os.close(fd)
            answer.append(probe())
        except OSError:
            answer.append(failed)  # not a namespace (EINVAL), gone, or no such interface (ENODEV)

    thread = threading.Thread(target=run, name="cnikit-netns-probe")
    thread.start()
    thread.join()
    return answer[0]


def interface_exists(netns: str, ifname: str) -> bool:
    """Whether ``ifname`` exists in the namespace at path ``netns``; False when the path is no
    namespace that can be entered (whatever then uses it reports that)."""
    return _probe_in(netns, lambda: socket.if_nametoindex(ifname) > 0, False)


def interface_ipv4_address(netns: str, ifname: str):
    """The primary IPv4 address of ``ifname`` in the namespace at path ``netns``, as
    :func:`host_ipv4_address` gives it (None: no such interface, or no IPv4 address on it)."""
    return _probe_in(netns, lambda: host_ipv4_address(ifname), None)


def host_ipv4_address(ifname: str):
    """The primary IPv4 address of an interface of the caller's namespace (the host's, unless
    the thread joined another), with its prefix (``ipaddress.IPv4Interface``); None when the
    interface does not exist or has no IPv4 address. Two ioctls, no pyroute2: the answer is
    wanted before every replace, and the primary address is the one plugins compare."""
    request = struct.pack("256s", ifname.encode()[:15])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            address = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, request)[20:24]
            netmask = fcntl.ioctl(sock.fileno(), SIOCGIFNETMASK, request)[20:24]
        except OSError as exc:
            if exc.errno in (errno.ENODEV, errno.EADDRNOTAVAIL):
                return None
            raise
    prefix = bin(int.from_bytes(netmask, "big")).count("1")
    return ipaddress.ip_interface(f"{socket.inet_ntoa(address)}/{prefix}")


def _setns(fd: int, nstype: int) -> None:
    """os.setns (Python 3.12 and later), or the C library's on older Pythons."""
    if hasattr(os, "setns"):
        os.setns(fd, nstype)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, nstype) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
