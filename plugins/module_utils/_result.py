# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""CNI versions and results: which versions exist, how to order and choose them, and how a
result converts between the three result families (0.1/0.2, 0.3/0.4, 1.0/1.1) by the spec's
rules."""

from __future__ import annotations

import copy
import ipaddress

from ._errors import ConfigError

KNOWN_VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")
HIGHEST_VERSION = KNOWN_VERSIONS[-1]
# The three result families, named by their first version.
FAMILY_0_1 = "0.1"  # 0.1.0, 0.2.0: ip4 / ip6
FAMILY_0_3 = "0.3"  # 0.3.x, 0.4.0: ips[].version
FAMILY_1_0 = "1.0"  # 1.0.0, 1.1.0: ips[] without version
_FAMILY = {"0.1.0": FAMILY_0_1, "0.2.0": FAMILY_0_1, "0.3.0": FAMILY_0_3, "0.3.1": FAMILY_0_3, "0.4.0": FAMILY_0_3,
           "1.0.0": FAMILY_1_0, "1.1.0": FAMILY_1_0}
_V11_INTERFACE_KEYS = ("mtu", "socketPath", "pciID")


class ResultError(ConfigError):
    """A result that cannot be parsed or converted."""


def version_key(version: str) -> tuple:
    """Sort key of a CNI version; ``""`` counts as 0.1.0, as in libcni."""
    version = version or "0.1.0"
    parts = version.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ConfigError("cniVersion", "is not a version of the form MAJOR.MINOR.PATCH", version)
    return tuple(int(p) for p in parts + ["0"] * (3 - len(parts)))


def supports(version: str, minimum: str) -> bool:
    return version_key(version) >= version_key(minimum)


def select_version(cni_version: str, cni_versions: list | None = None,
                   plugin_versions: list | None = None) -> str:
    """The version to run a network list at.

    As the spec and libcni say: the highest of ``cniVersions`` plus ``cniVersion`` that is not
    newer than 1.1.0; without ``cniVersions``, ``cniVersion`` as given. ``plugin_versions``
    (each plugin's VERSION answer, when probed) narrows the choice to versions every plugin
    supports, so a list that declares 1.1.0 and 1.0.0 runs at 1.0.0 on older binaries."""
    if not cni_versions:
        return cni_version
    candidates = [v for v in list(cni_versions) + ([cni_version] if cni_version else [])
                  if version_key(v) <= version_key(HIGHEST_VERSION)]
    if not candidates:
        return cni_version
    if plugin_versions is not None:
        # None that every plugin supports: libcni's own pick, and the plugin will say what is wrong.
        candidates = [v for v in candidates if all(v in supported for supported in plugin_versions)] or candidates
    return max(candidates, key=version_key)


def family(version: str) -> str:
    if not isinstance(version, str):
        raise ResultError("cniVersion", "must be a string", version)
    try:
        return _FAMILY[version or "0.1.0"]
    except KeyError:
        raise ResultError("cniVersion", f"unsupported CNI result version; known: {', '.join(KNOWN_VERSIONS)}", version) from None


def _ip_version(address: str, path: str = "ips[].address") -> str:
    if not isinstance(address, str):
        raise ResultError(path, "is not an IP address in CIDR form", address)
    try:
        return "4" if ipaddress.ip_interface(address).version == 4 else "6"
    except ValueError:
        raise ResultError(path, "is not an IP address in CIDR form", address) from None


def _from_family_0_1(result: dict) -> dict:
    converted = {"ips": [], "routes": []}
    for key, ver in (("ip4", "4"), ("ip6", "6")):
        ipconf = result.get(key)
        if not isinstance(ipconf, dict):
            continue
        entry = {"version": ver, "address": ipconf.get("ip")}
        if ipconf.get("gateway"):
            entry["gateway"] = ipconf["gateway"]
        converted["ips"].append(entry)
        converted["routes"].extend(ipconf.get("routes") or [])
    if result.get("dns"):
        converted["dns"] = result["dns"]
    return converted


def _to_family_0_1(result: dict) -> dict:
    """Lossy: the first IPv4 and first IPv6 address, routes by family, no interfaces."""
    converted = {}
    for ip in result.get("ips") or []:
        key = "ip4" if _ip_version(ip.get("address", "")) == "4" else "ip6"
        if key not in converted:
            converted[key] = {"ip": ip["address"]}
            if ip.get("gateway"):
                converted[key]["gateway"] = ip["gateway"]
    if not converted:
        raise ResultError("ips", "cannot convert to a 0.1.0/0.2.0 result: no valid IP addresses", result.get("ips"))
    for route in result.get("routes") or []:
        key = "ip4" if _ip_version(route.get("dst", ""), "routes[].dst") == "4" else "ip6"
        if key in converted:
            legacy_route = {"dst": route["dst"]}
            if route.get("gw"):
                legacy_route["gw"] = route["gw"]
            converted[key].setdefault("routes", []).append(legacy_route)
    if result.get("dns"):
        converted["dns"] = result["dns"]
    return converted


def _objects(value, path: str) -> list:
    """``value`` as a list of objects (None counts as empty), else a ResultError at ``path``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ResultError(path, "must be a list", value)
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ResultError(f"{path}[{index}]", "must be an object", item)
    return value


def _check_shape(result: dict) -> None:
    """The parts a conversion walks have the spec's types. A bad result (from a plugin, or a
    damaged cache file) is a ResultError naming the part, never a crash of ADD's rollback or DEL."""
    for key in ("ips", "routes", "interfaces"):
        _objects(result.get(key), key)
    for key in ("ip4", "ip6"):
        ipconf = result.get(key)
        if ipconf is not None and not isinstance(ipconf, dict):
            raise ResultError(key, "must be an object", ipconf)
        _objects((ipconf or {}).get("routes"), f"{key}.routes")


def convert(result: dict, to_version: str) -> dict:
    """Convert a result to ``to_version`` by the spec's rules; the input is not modified."""
    if not isinstance(result, dict):
        raise ResultError("result", "must be a JSON object", result)
    _check_shape(result)
    result = copy.deepcopy(result)
    source = family(result.get("cniVersion") or "")
    target = family(to_version)
    if source == FAMILY_0_1 and target != FAMILY_0_1:
        result = _from_family_0_1(result)
        source = FAMILY_0_3
    if target == FAMILY_0_1 and source != FAMILY_0_1:
        result = _to_family_0_1(result)
    elif target == FAMILY_0_3:
        for ip in result.get("ips") or []:
            ip["version"] = _ip_version(ip.get("address", ""))
        for interface in result.get("interfaces") or []:
            for key in _V11_INTERFACE_KEYS:
                interface.pop(key, None)
    elif target == FAMILY_1_0:
        for ip in result.get("ips") or []:
            ip.pop("version", None)
        if to_version == "1.0.0":
            for interface in result.get("interfaces") or []:
                for key in _V11_INTERFACE_KEYS:
                    interface.pop(key, None)
    result["cniVersion"] = to_version
    return result


def summarise(result: dict) -> dict:
    """The fields a playbook wants at hand: the sandbox interfaces, addresses and MACs. Parts of
    the wrong shape (a damaged cache entry's) are skipped."""
    def objects(key: str) -> list:
        value = result.get(key)
        return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []

    interfaces = objects("interfaces")
    ips = [ip.get("address") for ip in objects("ips") if ip.get("address")]
    for key in ("ip4", "ip6"):
        if isinstance(result.get(key), dict) and result[key].get("ip"):
            ips.append(result[key]["ip"])
    sandbox = [i for i in interfaces if i.get("sandbox")]
    return {
        "interfaces": [i.get("name") for i in sandbox],
        "ips": ips,
        "mac": sandbox[0].get("mac") if sandbox else None,
    }
