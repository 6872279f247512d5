# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""What every plugin's rules share: Go's parsing of addresses and names, JSON paths, the
context a plugin's checks receive, and the rules several plugins apply alike (MTU, MAC, routes)."""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field

from .._errors import ConfigError
from .._identifiers import check_ifname
from .._result import version_key

_PLAIN_KEY = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_MAC = re.compile(
    r"\A(?:[0-9A-Fa-f]{2}(?P<sep>[:-])(?:[0-9A-Fa-f]{2}(?P=sep)){4,18}[0-9A-Fa-f]{2}"
    r"|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2,9})\Z")
DHCP_OPTION_NAMES = ("dhcp-client-identifier", "subnet-mask", "routers", "host-name", "user-class",
                     "vendor-class-identifier")
# Ethernet-like devices (veth, bridge, macvlan, tap): the kernel's ETH_MIN_MTU and the largest
# MTU a veth or bridge takes (ETH_MAX_MTU).
MIN_MTU = 68
MAX_MTU = 65535


def json_path(parts) -> str:
    """``["plugins", 0, "sysctl", "net.core.x"]`` -> ``plugins[0].sysctl["net.core.x"]``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text


# --- formats, with Go's parsing rules -------------------------------------------------------------

def is_ip(value) -> bool:
    # Python's ipaddress rejects leading-zero octets like Go >= 1.17; Go has no IPv6 zones here.
    if not isinstance(value, str) or "%" in value:
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def parse_cidr(value):
    """``ipaddress.ip_interface`` for a Go-parsable CIDR, else None."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    address, prefix = value.split("/")
    if not is_ip(address) or not prefix.isdigit() or (len(prefix) > 1 and prefix[0] == "0"):
        return None
    try:
        return ipaddress.ip_interface(value)
    except ValueError:
        return None


def is_mac(value: str) -> bool:
    return bool(_MAC.match(value)) and len(re.sub(r"[:.\-]", "", value)) in (12, 16, 40)


def _is_ifname(value: str) -> bool:
    try:
        check_ifname(value)
    except ConfigError:
        return False
    return True


def _is_dhcp_option(value: str) -> bool:
    return value in DHCP_OPTION_NAMES or (value.isdigit() and int(value) <= 255)


FORMAT_CHECKS = {
    "cidr": lambda v: parse_cidr(v) is not None,
    "ip": is_ip,
    "mac": is_mac,
    "ifname": _is_ifname,
    "dhcp-option": _is_dhcp_option,
}


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def list_of(value) -> list:
    """``value`` if it is a list, else empty: a wrong type is the schema's finding, and the
    semantic checks after it must not crash on it."""
    return value if isinstance(value, list) else []


def map_of(value) -> dict:
    """``value`` if it is an object, else empty (see list_of)."""
    return value if isinstance(value, dict) else {}


def version_or_none(value):
    try:
        return version_key(value)
    except (ConfigError, TypeError, AttributeError):
        return None


# --- plugin releases ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Releases:
    """The plugin releases an installed binary may be: ``[low, high)`` as version keys, ``high``
    None when open-ended. A cnikit manifest names the release; a probe only tells whether the
    binary accepts spec 1.1.0, which releases from v1.6.0 on do."""

    low: tuple
    high: tuple | None
    label: str

    @classmethod
    def exactly(cls, release: str) -> Releases | None:
        key = version_or_none(release.lstrip("v"))
        if key is None:
            return None
        return cls(key, key[:2] + (key[2] + 1,), f"v{release.lstrip('v')}")

    @classmethod
    def from_spec_versions(cls, versions) -> Releases:
        if SPEC_1_1 in versions:
            return cls(version_key(SPEC_1_1_RELEASE), None, f"v{SPEC_1_1_RELEASE} or newer")
        return cls((0, 0, 0), version_key(SPEC_1_1_RELEASE), f"older than v{SPEC_1_1_RELEASE}")

    def at_least(self, release: str) -> bool:
        return self.low >= version_key(release)

    def before(self, release: str) -> bool:
        return self.high is not None and self.high <= version_key(release)


def binary_releases(release, spec_versions) -> Releases:
    """The releases a binary may be: the ``release`` recorded for it (a cnikit manifest, the
    distribution's package), else what the CNI versions it supports tell."""
    return (Releases.exactly(release) if isinstance(release, str) else None) \
        or Releases.from_spec_versions(spec_versions)


# The first plugin release that accepts spec 1.1.0; binaries without it are older. (Spec 1.1.0
# here is that fact, not the highest version, which _result.HIGHEST_VERSION holds.)
SPEC_1_1 = "1.1.0"
SPEC_1_1_RELEASE = "1.6.0"
UNRELEASED = "99.0.0"


@dataclass
class Subnet:
    """A subnet an IPAM section allocates from, kept for the checks across networks."""

    network: object
    path: str


# --- what a plugin's checks receive --------------------------------------------------------------

@dataclass
class Context:
    """One plugin object under check: where it is, what runs before it, the CNI version the list
    runs at, the release of its installed binary (None when not probed), and whether the checks
    run on the host that will run it: ``on_host``, the ``_host_reads.HostReads`` through which
    they read /proc, /sys and daemons' sockets (and only through it, so that a remembered verdict
    knows what it depends on), or None."""

    report: object
    base: list
    version: str
    position: int = 0
    seen: list = field(default_factory=list)  # [(type, plugin as Go reads it)] before this one
    previous_main: str | None = None  # the last reference plugin before this one that is not chained
    releases: Releases | None = None
    on_host: object = None  # a _host_reads.HostReads on the host
    subnets: list = field(default_factory=list)  # host-local subnets, for the cross-network checks
    # the plugin's IPAM section's ``gateway_sets`` (PluginRules): [(path parts under the section,
    # [gateways])] per address it hands out; None when its type cannot tell
    ipam_gateway_sets: list | None = None

    def path(self, *parts) -> str:
        return json_path(self.base + list(parts))

    def error(self, parts, message: str, *value, of_host: bool = False) -> None:
        self.report.error(self.path(*parts), message, *value, of_host=of_host)

    def warn(self, parts, message: str, *value, of_host: bool = False) -> None:
        self.report.warn(self.path(*parts), message, *value, of_host=of_host)

    def refused_from(self, release: str, parts, message: str, *value) -> None:
        """A rule the plugin enforces from ``release`` on: an error when the installed binary is
        that release or newer; nothing when it predates it (it ignores the key, which the
        key-age check reports); a warning when the release is not known."""
        probed = self.releases is not None
        if probed and self.releases.at_least(release):
            self.error(parts, message, *value, of_host=True)
        elif not probed or not self.releases.before(release):
            known = f"the installed one is {self.releases.label}" if probed else "no binary was probed"
            self.warn(parts, f"{message} (plugin releases from {release_name(release)} reject this; {known})", *value,
                      of_host=probed)

    def version_at_least(self, version: str) -> bool:
        key = version_or_none(self.version or "0.1.0")
        return key is not None and key >= version_key(version)


def release_name(release: str) -> str:
    return "an unreleased version" if release == UNRELEASED else f"v{release}"


@dataclass(frozen=True)
class KnownCheckDefect:
    """A defect of released plugins' CHECK; ``fixed_in``: the first release without it (None
    while every release has it). Two kinds:

    - a CHECK failure that is the plugin's defect, not the attachment's (``message`` matches
      it): the engine tolerates and reports a matching error of this plugin, never repairs it.
      Where the plugin stops at the defect before checking the rest, ``refresh`` gives the
      prevResult to run CHECK with again, so that the rest is still checked (None: the error
      stands);
    - ``withheld``: a CHECK that does harm even when it passes. The engine does not send CHECK
      through a binary that may be a release before ``fixed_in`` (one whose release is unknown
      and that does not speak spec 1.1.0 may be), and verifies the attachment without it."""

    name: str
    message: re.Pattern | None
    explanation: str
    refresh: object = None  # refresh(match, prevResult) -> prevResult or None
    fixed_in: str | None = None
    withheld: bool = False

    def match(self, message: str):
        return self.message.search(message) if self.message is not None else None

    def may_affect(self, releases: Releases) -> bool:
        """Whether a binary that may be these ``releases`` may have the defect."""
        return self.fixed_in is None or not releases.at_least(self.fixed_in)


@dataclass(frozen=True)
class PluginRules:
    """Everything the validator knows about one plugin type, in the plugin's own file."""

    schema: dict
    checks: object = None  # checks(plugin as Go reads it, Context): what the schema cannot say
    added_in: dict = field(default_factory=dict)  # key -> first release that reads it
    removed_in: dict = field(default_factory=dict)  # key -> first release that no longer reads it
    min_spec: str | None = None  # lowest CNI version the plugin accepts
    chained: bool = False  # needs a previous plugin's result on ADD
    creates_interface: bool = False  # creates CNI_IFNAME in the container
    # reuses_interface(position, ipam_type) -> whether this use of a plugin that creates_interface
    # works on the interface an earlier plugin created instead (None: it never does)
    reuses_interface: object = None
    configures_existing_interface: bool = False  # CNI_IFNAME must already exist (loopback's lo)
    check_defects: tuple = ()  # KnownCheckDefect of released versions of the plugin
    # key -> the error for a map under that key that repeats one of its own keys (which Go's
    # decoder would otherwise settle silently, keeping the last value), when the plugin refuses it
    duplicate_key_errors: dict = field(default_factory=dict)
    # add_blocker(plugin, ipam_gateways) -> why an ADD of this plugin object would fail on this
    # host as it is now (host state the plugin refuses), or None; asked before an attachment is
    # replaced, so that a replace the new configuration cannot complete removes nothing.
    add_blocker: object = None
    # gateway_sets(ipam) -> [(path parts under the section, [gateways])]: per address an IPAM type
    # hands out (host-local: per range set), the gateways, with their subnet's prefix (ipaddress
    # interfaces), of the ranges it may come from; None when they are not known before the plugin runs.
    gateway_sets: object = None
    # subnets(ipam) -> [Subnet] an IPAM type allocates from, for the checks across networks
    subnets: object = None
    # host_device(plugin) -> (kind, name) of the host device the plugin puts every network's
    # attachments on (bridge's bridge), which can hold only one network's gateways; None: none
    host_device: object = None
    # an IPAM type that hands out the addresses CNI_ARGS IP asks for (so a repaired or replaced
    # attachment can ask for the ones it had)
    honours_requested_ips: bool = False
    # reserved_addresses(ipam, network, container_id, ifname) -> the addresses an IPAM type keeps
    # on the host for an attachment (host-local's files), so that the repair of an interrupted ADD,
    # which has no cached result, can ask for them; None: the IPAM keeps none the host can read
    reserved_addresses: object = None
    # daemon_state() -> {socket, present, accepting} of the daemon the plugin needs on the host
    # (dhcp's), which cni_info reports as ``<type>_daemon``; None: it needs none
    daemon_state: object = None

    def creates_interface_at(self, position: int, ipam_type) -> bool:
        """Whether the plugin creates CNI_IFNAME at this place in the list, with this IPAM type."""
        return self.creates_interface and not (self.reuses_interface and self.reuses_interface(position, ipam_type))


# --- rules several plugins share -----------------------------------------------------------------

def check_mtu(plugin: dict, ctx: Context, key: str = "mtu") -> None:
    mtu = plugin.get(key)
    if not is_int(mtu) or mtu == 0:
        return
    if mtu > MAX_MTU:
        ctx.error([key], f"is above {MAX_MTU}, the largest MTU the kernel sets on such a device", mtu)
    elif mtu < MIN_MTU:
        ctx.error([key], f"is below {MIN_MTU}, the smallest MTU the kernel sets on such a device", mtu)


def check_masq_backend(plugin: dict, ctx: Context) -> None:
    """bridge and ptp read ``ipMasqBackend`` only while ``ipMasq`` is true (the schema checks
    its value only then)."""
    if "ipMasqBackend" in plugin and plugin.get("ipMasq") is not True:
        ctx.warn(["ipMasqBackend"], "has no effect while ipMasq is off: the plugin ignores it then")


def check_master_mtu(plugin: dict, ctx: Context) -> None:
    """On the host, an MTU above the master's: the plugins (macvlan, vlan) or the kernel
    (ipvlan) refuse it."""
    mtu, master = plugin.get("mtu"), plugin.get("master")
    if not ctx.on_host or not is_int(mtu) or not isinstance(master, str) or not _is_ifname(master) \
            or plugin.get("linkInContainer") is True:
        return
    try:
        master_mtu = int(ctx.on_host.text(f"/sys/class/net/{master}/mtu"))
    except (TypeError, ValueError):
        return
    if mtu > master_mtu:
        ctx.error(["mtu"], f"is above the MTU of master {master} on this host ({master_mtu}); the plugin refuses it", mtu,
                  of_host=True)


def check_mac(plugin: dict, ctx: Context, key: str = "mac") -> None:
    mac = plugin.get(key)
    if not isinstance(mac, str) or not is_mac(mac):
        return
    octets = bytes.fromhex(re.sub(r"[:.\-]", "", mac))
    if octets[0] & 1:
        ctx.error([key], "is a multicast address (lowest bit of the first octet set); the kernel refuses it "
                  "as an interface address", mac)
    elif not any(octets):
        ctx.error([key], "is all zeros; the kernel refuses it as an interface address", mac)


def check_routes(routes, parts: list, networks: list, ctx: Context, gateways: dict | None = None) -> None:
    """Routes of an IPAM section: the destination must be a network address, and the gateway (or,
    without one, the family's gateway the plugin falls back to) must be inside one of the IPAM's
    subnets, or the kernel refuses the route. ``networks``: the subnets the IPAM assigns from
    (empty when unknown, e.g. given at runtime); ``gateways``: family -> default gateway."""
    for index, route in enumerate(list_of(routes)):
        if not isinstance(route, dict):
            continue
        dst = parse_cidr(route.get("dst"))
        if dst is not None and dst.ip != dst.network.network_address:
            ctx.error(parts + [index, "dst"], f"has host bits set; the kernel refuses such a route (the network "
                      f"address is {dst.network})", route["dst"])
        if not networks or dst is None:
            continue
        gateway = route.get("gw")
        key = "gw"
        if gateway is None:
            gateway = (gateways or {}).get(dst.version)
            key = None
        if not is_ip(gateway):
            continue
        address = ipaddress.ip_address(gateway)
        if address.version == dst.version and not any(address in n for n in networks if n.version == address.version):
            where = parts + [index] + ([key] if key else [])
            what = "is" if key else f"has no gw, so the plugin routes via the gateway {gateway}, which is"
            ctx.error(where, f"{what} outside every subnet of this IPAM section; the kernel refuses the route "
                      "('network is unreachable')", gateway if key else route)
