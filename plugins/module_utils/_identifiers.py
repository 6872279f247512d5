# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The CNI spec's rules for identifiers, and the rules for IP addresses and CIDRs, checked before
any path or netlink call is built from them; and cnitool's rule for deriving a container ID from
a netns path."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from dataclasses import dataclass

from ._errors import ConfigError

# Network names, container IDs (spec, libcni pkg/utils) and our netns names share one rule.
ID_PATTERN = re.compile(r"\A[a-zA-Z0-9][a-zA-Z0-9_.\-]*\Z")
MAX_NAME_BYTES = 255  # a file name on Linux: the names end up in file names
MAX_IFNAME_BYTES = 15  # IFNAMSIZ - 1
NETNS_DIR = "/var/run/netns"  # the spelling `ip netns` and cnitool's documentation use
NETNS_DIRS = (NETNS_DIR, "/run/netns")  # the same directory, spelt both ways
# A plugin type is the file name of its binary in the plugin directories: what the collection
# validates, runs, installs and records in a manifest. (\Z, not $, which matches before a "\n".)
PLUGIN_FILE_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")
PLUGIN_FILE_NAME_RULE = "a letter or digit, then letters, digits, '_', '.' and '-'"
CIDR_RULE = "a network address and a prefix length, such as 10.244.0.0/24"


def check_id(value: object, path: str, what: str) -> str:
    """Return ``value`` if it is a valid network name / container ID / netns name."""
    if not isinstance(value, str) or not value:
        raise ConfigError(path, f"{what} must be a non-empty string", value)
    if len(value.encode()) > MAX_NAME_BYTES:
        raise ConfigError(path, f"{what} is longer than {MAX_NAME_BYTES} bytes", value)
    if not ID_PATTERN.match(value):
        raise ConfigError(
            path,
            f"{what} must start with a letter or digit and contain only letters, digits, '_', '.' and '-'",
            value,
        )
    return value


def is_plugin_file_name(value: object) -> bool:
    """Can ``value`` name a plugin binary (a plugin type)?"""
    return isinstance(value, str) and bool(PLUGIN_FILE_NAME.match(value))


def check_plugin_type(value: object, path: str = "type") -> str:
    """Return ``value`` if it can name a plugin binary."""
    if not isinstance(value, str) or not value:
        raise ConfigError(path, "plugin type must be a non-empty string", value)
    if not is_plugin_file_name(value):
        raise ConfigError(path, f"plugin type must be a file name: {PLUGIN_FILE_NAME_RULE}", value)
    return value


def check_file_name(file_name: str, path: str, value: object) -> str:
    """A file name made from option ``path`` (whose value was ``value``) must fit in a Linux
    directory entry; checked before the file is, so the error names the option."""
    if len(file_name.encode()) > MAX_NAME_BYTES:
        raise ConfigError(path, f"makes the file name {file_name!r} longer than {MAX_NAME_BYTES} bytes", value)
    return file_name


def check_conflist_file_name(file_name: object, path: str = "filename") -> str:
    """A conflist file name given by the user: the rule of network names (no '/', no leading
    '.', '-' or space, no control, look-alike or direction-changing characters, 255 bytes)."""
    return check_id(file_name, path, "file name")


def check_network_name(name: object, path: str = "name") -> str:
    return check_id(name, path, "network name")


def check_container_id(container_id: object, path: str = "container_id") -> str:
    return check_id(container_id, path, "container ID")


def check_netns_name(name: object, path: str = "netns") -> str:
    return check_id(name, path, "network namespace name")


def check_ifname(ifname: object, path: str = "ifname") -> str:
    """The kernel's and libcni's rules for an interface name."""
    if not isinstance(ifname, str) or not ifname:
        raise ConfigError(path, "interface name must be a non-empty string", ifname)
    if len(ifname.encode()) > MAX_IFNAME_BYTES:
        raise ConfigError(path, f"interface name is longer than {MAX_IFNAME_BYTES} bytes", ifname)
    if ifname in (".", ".."):
        raise ConfigError(path, "interface name must not be '.' or '..'", ifname)
    # The kernel takes any other byte; control characters and look-alike letters (a Cyrillic
    # 'е' in 'еth0') would only hide an interface from the operator reading its name.
    if any(ch in "/:" or not "!" <= ch <= "~" for ch in ifname):
        raise ConfigError(path, "interface name must not contain '/', ':', whitespace, control characters or "
                          "letters outside ASCII", ifname)
    return ifname


def check_cidr(value: object, path: str):
    """The network ``value`` names, as ipaddress's network, if it is a CIDR with no host bits
    set; whitespace around it is dropped (inventory values are typed by hand)."""
    # A prefix length is required: ipaddress reads 10.244.0.0 alone as a /32.
    if not isinstance(value, str) or "/" not in value:
        raise ConfigError(path, f"must be a CIDR: {CIDR_RULE}", value)
    try:
        return ipaddress.ip_network(value.strip())
    except ValueError:
        pass  # found out why below: parsing a valid CIDR once is what a thousand routes cost
    try:
        network = ipaddress.ip_network(value.strip(), strict=False)
    except ValueError:
        raise ConfigError(path, f"is not a CIDR: {CIDR_RULE}", value) from None
    raise ConfigError(path, f"has host bits set: its network address is {network}", value)


def check_ip(value: object, path: str, hint: str = ""):
    """The address ``value`` names, as ipaddress's address; whitespace around it is dropped.
    ``hint``, when given, follows the error: why a host name will not do, say."""
    try:
        if isinstance(value, str):  # ipaddress would take an integer as an address
            return ipaddress.ip_address(value.strip())
    except ValueError:
        pass
    raise ConfigError(path, f"is not an IP address: {hint}" if hint else "is not an IP address", value)


@dataclass(frozen=True)
class AttachmentKey:
    """What keys an attachment for the spec and libcni: network, container ID and ifname.
    Checked once, when made, so that the cache, lock and marker paths built from it stay inside
    the cache directory without checking again at every file access."""

    network: str
    container_id: str
    ifname: str

    def __post_init__(self):
        check_network_name(self.network, "network")
        check_container_id(self.container_id)
        check_ifname(self.ifname)
        if len(self.file_name.encode()) > MAX_NAME_BYTES:
            raise ConfigError("container_id", f"network name, container ID and ifname together exceed "
                              f"{MAX_NAME_BYTES} bytes", self.file_name)

    @property
    def file_name(self) -> str:
        """libcni's name for the attachment's cache file: ``<network>-<container id>-<ifname>``."""
        return f"{self.network}-{self.container_id}-{self.ifname}"


def netns_path(netns: object, path: str = "netns") -> str:
    """Map a netns name to ``/var/run/netns/<name>``; accept an absolute path without ``..``.

    A path is cleaned the way Go's filepath.Abs cleans it (no symlink resolution), so the
    container ID derived from it is the one cnitool derives from the same argument; ``..`` is
    refused rather than cleaned away, so that the path given is the namespace used."""
    if not isinstance(netns, str) or not netns:
        raise ConfigError(path, "network namespace must be a non-empty name or path", netns)
    if "\x00" in netns:
        raise ConfigError(path, "network namespace must not contain NUL", netns)
    if "/" not in netns:
        return os.path.join(NETNS_DIR, check_netns_name(netns, path))
    if not netns.startswith("/"):
        raise ConfigError(path, "a network namespace path must be absolute", netns)
    if ".." in netns.split("/"):
        # Cleaned, /var/run/netns/../../etc/passwd is another file: say which namespace is meant.
        raise ConfigError(path, "a network namespace path must not contain '..'", netns)
    return os.path.normpath(netns).replace("//", "/")


def netns_name(path: str) -> str | None:
    """The name of a named netns path (``/var/run/netns/x`` or ``/run/netns/x``), else None."""
    directory, name = os.path.split(path)
    if directory in NETNS_DIRS and ID_PATTERN.match(name):
        return name
    return None


def canonical_netns(path: str) -> str:
    """One spelling per namespace path, for comparing them: ``/run/netns/x`` and
    ``/var/run/netns/x`` are the same namespace; "" stays "" (no namespace known)."""
    name = netns_name(path) if path else None
    if name is not None:
        return os.path.join(NETNS_DIR, name)
    return os.path.normpath(path) if path else ""


def cnitool_container_id(netns: str) -> str:
    """cnitool's container ID for a netns path: ``cnitool-`` + sha512(path)[:10] in hex."""
    return "cnitool-" + hashlib.sha512(netns.encode()).hexdigest()[:20]


def normalise_cni_args(args: object, path: str = "args") -> list:
    """CNI_ARGS as libcni caches them: a list of [key, value] pairs.

    Accepts a mapping, a list of pairs, or a ``K=V;K2=V2`` string. Keys and values must be
    non-empty and free of ``;`` and ``=`` (cnitool rejects both), so that the serialised
    ``CNI_ARGS`` parses back to the same pairs."""
    if args in (None, "", {}, []):
        return []
    if isinstance(args, str):
        pairs = []
        for item in args.split(";"):
            if item.count("=") != 1:
                raise ConfigError(path, "each CNI_ARGS item must be KEY=VALUE", item)
            pairs.append(item.split("="))
    elif isinstance(args, dict):
        pairs = [[k, v] for k, v in args.items()]
    elif isinstance(args, (list, tuple)):
        pairs = [list(p) if isinstance(p, (list, tuple)) else p for p in args]
    else:
        raise ConfigError(path, "must be a mapping, a list of [key, value] pairs or a K=V;K2=V2 string", args)
    result = []
    for index, pair in enumerate(pairs):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ConfigError(f"{path}[{index}]", "must be a [key, value] pair", pair)
        key, value = pair
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int):
            value = str(value)
        for part, text in (("key", key), ("value", value)):
            if not isinstance(text, str) or not text or any(ch in text for ch in ";=\x00"):
                raise ConfigError(f"{path}[{index}]", f"CNI_ARGS {part} must be a non-empty string without ';', '=' or NUL", text)
        result.append([key, value])
    return result


def cni_args_string(pairs: list) -> str:
    """Serialise [key, value] pairs into the CNI_ARGS environment value."""
    return ";".join(f"{k}={v}" for k, v in pairs)
