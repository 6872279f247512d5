# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""JSON Schemas, as Python data, of the reference plugins' configurations and of their IPAM
sections, encoding the checks each plugin's own Go code makes (containernetworking/plugins).

Conventions, read by ``_validate``:
- ``format`` names one of FORMATS (CIDR, IP, MAC, interface name, DHCP option); the checks
  themselves live in ``_validate`` so that Go's parsing rules have one home.
- ``x-message`` on a subschema replaces jsonschema's wording for any failure inside it except a
  wrong type, so it sits only on rule subschemas (in ``allOf``) that hold nothing else: mutually
  exclusive keys, pairs that go together, limits with the plugin's own wording.
- An object schema with ``properties`` and no ``additionalProperties`` is *closed*: a key it does
  not list is reported as a warning (the plugins ignore it silently), not as an error.
- ``integer`` means a JSON integer: Go rejects ``1500.0`` where jsonschema would accept it.

The shared definitions are plain Python objects reused by reference rather than ``$ref``s:
resolving references costs more than the rest of a validation, and nothing here is recursive."""

from __future__ import annotations

UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1
VLAN_MAX = 4094
# bandwidth: "burst cannot be more than 4GB"; the check is burst / 8 < 2^32 - 1 (bits).
BURST_LIMIT_BITS = (UINT32_MAX - 1) * 8 + 7

FORMATS = {
    "cidr": "an address with prefix length, like 10.1.0.0/16 or fd00::/64",
    "ip": "an IPv4 or IPv6 address",
    "mac": "a MAC address like 0a:58:0a:01:00:05",
    "ifname": "an interface name (1-15 bytes, no '/', ':' or whitespace)",
    "dhcp-option": "a DHCP option name (dhcp-client-identifier, subnet-mask, routers, host-name, "
                   "user-class, vendor-class-identifier) or a decimal code 0-255",
}

DEFS = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "int": {"type": "integer"},
    "uint": {"type": "integer", "minimum": 0},
    "uint32": {"type": "integer", "minimum": 0, "maximum": UINT32_MAX},
    "uint64": {"type": "integer", "minimum": 0, "maximum": UINT64_MAX},
    "cidr": {"type": "string", "format": "cidr"},
    "ip": {"type": "string", "format": "ip"},
    "mac": {"type": "string", "format": "mac"},
    "ifname": {"type": "string", "format": "ifname"},
    "strings": {"type": "array", "items": {"type": "string"}},
    "backend_ip": {"enum": ["iptables", "nftables"]},
}
DEFS["route"] = {
    "type": "object",
    "required": ["dst"],
    "properties": {
        "dst": DEFS["cidr"], "gw": DEFS["ip"], "mtu": DEFS["uint"], "advmss": DEFS["uint"],
        "priority": DEFS["uint"], "table": DEFS["uint"], "scope": DEFS["uint"],
    },
}
DEFS["routes"] = {"type": "array", "items": DEFS["route"]}
DEFS["dns"] = {
    "type": "object",
    "properties": {
        "nameservers": {"type": "array", "items": DEFS["ip"]},
        "domain": DEFS["string"],
        "search": DEFS["strings"],
        "options": DEFS["strings"],
    },
}
DEFS["ipam_ref"] = {
    # The section's own keys are checked against the IPAM schema of its type.
    "type": "object",
    "properties": {"type": DEFS["string"]},
    "additionalProperties": True,
}
DEFS["capabilities"] = {"type": "object", "additionalProperties": DEFS["bool"]}

# Keys every plugin object may carry (types.NetConf). The reserved ones (args, runtimeConfig,
# prevResult, cni.dev/*) are the envelope check's business.
COMMON_PLUGIN_KEYS = {
    "type": DEFS["string"],
    "name": DEFS["string"],
    "cniVersion": DEFS["string"],
    "capabilities": DEFS["capabilities"],
    "ipam": DEFS["ipam_ref"],
    "dns": DEFS["dns"],
}
RESERVED_KEYS = ("args", "runtimeConfig", "prevResult")
RESERVED_PREFIX = "cni.dev/"

# Capability names of CONVENTIONS.md; others are reported as warnings.
KNOWN_CAPABILITIES = (
    "portMappings", "bandwidth", "ipRanges", "ips", "mac", "deviceID", "dns", "infinibandGUID",
    "aliases", "cgroupPath",
)


def _requires_ipam_type(plugin: str) -> dict:
    return {
        "required": ["ipam"],
        "properties": {"ipam": {"required": ["type"], "properties": {"type": {"minLength": 1}}}},
        "x-message": f"{plugin} needs an IPAM section with a type (the plugin fails with "
                     "'no plugin name provided')",
    }


def _not_both_true(first: str, second: str, message: str) -> dict:
    return {
        "not": {
            "required": [first, second],
            "properties": {first: {"const": True}, second: {"const": True}},
        },
        "x-message": message,
    }


def _together(first: str, second: str, message: str) -> dict:
    """When ``first`` is set to a non-zero value, ``second`` must be too (Go: 0 means unset)."""
    return {
        "if": {"required": [first], "properties": {first: {"type": "integer", "exclusiveMinimum": 0}}},
        "then": {"required": [second], "properties": {second: {"not": {"const": 0}}},
                 "x-message": message},
    }


def _plugin(properties: dict, *rules: dict) -> dict:
    schema = {"type": "object", "required": ["type"], "properties": {**COMMON_PLUGIN_KEYS, **properties}}
    if rules:
        schema["allOf"] = list(rules)
    return schema


VLAN_ID = {"type": "integer", "minimum": 0, "maximum": VLAN_MAX}
BURST = {"type": "integer", "minimum": 0,
         "allOf": [{"maximum": BURST_LIMIT_BITS, "x-message": "burst cannot be more than 4GB"}]}
TRUNK_ID = {"type": "integer", "minimum": 1, "maximum": VLAN_MAX}

PLUGIN_SCHEMAS = {
    "bridge": _plugin(
        {
            "bridge": DEFS["ifname"], "isGateway": DEFS["bool"], "isDefaultGateway": DEFS["bool"],
            "forceAddress": DEFS["bool"], "ipMasq": DEFS["bool"], "ipMasqBackend": DEFS["backend_ip"],
            "mtu": DEFS["uint"], "hairpinMode": DEFS["bool"], "promiscMode": DEFS["bool"],
            "vlan": VLAN_ID,
            "vlanTrunk": {"type": "array", "items": {
                "type": "object",
                "properties": {"minID": TRUNK_ID, "maxID": TRUNK_ID, "id": TRUNK_ID},
                "allOf": [{"dependentRequired": {"minID": ["maxID"], "maxID": ["minID"]},
                           "x-message": "minID and maxID must be configured together"}],
            }},
            "preserveDefaultVlan": DEFS["bool"], "macspoofchk": DEFS["bool"], "enabledad": DEFS["bool"],
            "disableContainerInterface": DEFS["bool"], "portIsolation": DEFS["bool"],
        },
        _not_both_true("hairpinMode", "promiscMode",
                       "cannot set hairpinMode and promiscMode at the same time"),
        {
            "not": {
                "required": ["disableContainerInterface", "ipam"],
                "properties": {"disableContainerInterface": {"const": True},
                               "ipam": {"required": ["type"], "properties": {"type": {"minLength": 1}}}},
            },
            "x-message": "cannot use IPAM when disableContainerInterface is set",
        },
    ),
    "ipvlan": _plugin({
        "master": DEFS["ifname"], "mode": {"enum": ["l2", "l3", "l3s", ""]}, "mtu": DEFS["uint"],
        "linkInContainer": DEFS["bool"],
    }),
    "macvlan": _plugin({
        "master": DEFS["ifname"], "mode": {"enum": ["bridge", "private", "vepa", "passthru", ""]},
        "mtu": DEFS["uint"], "mac": DEFS["mac"], "bcqueuelen": DEFS["uint32"],
        "linkInContainer": DEFS["bool"],
    }),
    "ptp": _plugin(
        {"ipMasq": DEFS["bool"], "ipMasqBackend": DEFS["backend_ip"], "mtu": DEFS["uint"]},
        _requires_ipam_type("ptp"),
    ),
    "host-device": _plugin(
        {
            "device": DEFS["ifname"], "hwaddr": DEFS["mac"],
            "kernelpath": {"type": "string", "allOf": [
                {"pattern": "^/sys/devices/", "x-message": "must be absolute and begin with /sys/devices/"}]},
            "pciBusID": {"type": "string", "allOf": [
                {"pattern": "^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-7]$",
                 "x-message": "must be a PCI address like 0000:00:1f.6"}]},
        },
        {
            "anyOf": [
                {"required": ["device"]}, {"required": ["hwaddr"]}, {"required": ["kernelpath"]},
                {"required": ["pciBusID"]},
                {"required": ["capabilities"],
                 "properties": {"capabilities": {"required": ["deviceID"],
                                                 "properties": {"deviceID": {"const": True}}}}},
            ],
            "x-message": 'specify either "device", "hwaddr", "kernelpath" or "pciBusID" '
                         "(or the deviceID capability)",
        },
    ),
    "vlan": _plugin(
        {"master": DEFS["ifname"], "vlanId": VLAN_ID, "mtu": DEFS["uint"], "linkInContainer": DEFS["bool"]},
        {"required": ["master"],
         "x-message": '"master" is required: the host interface to create the VLAN on'},
        _requires_ipam_type("vlan"),
    ),
    "loopback": _plugin({}),
    "dummy": _plugin({}, _requires_ipam_type("dummy")),
    "tap": _plugin({
        "mac": DEFS["mac"], "mtu": DEFS["uint"], "multiQueue": DEFS["bool"], "owner": DEFS["uint32"],
        "group": DEFS["uint32"], "selinuxContext": DEFS["string"], "bridge": DEFS["ifname"],
    }),
    "vrf": _plugin(
        {"vrfname": DEFS["ifname"], "table": DEFS["uint32"]},
        {"required": ["vrfname"], "x-message": "vrfname is required (the VRF to create or join)"},
    ),
    "tuning": _plugin({
        "sysctl": {"type": "object", "additionalProperties": DEFS["string"]},
        "mac": DEFS["mac"], "promisc": DEFS["bool"], "mtu": DEFS["uint"], "txQLen": DEFS["uint"],
        "allmulti": DEFS["bool"], "dataDir": DEFS["string"],
    }),
    "portmap": _plugin(
        {
            "backend": DEFS["backend_ip"], "snat": DEFS["bool"], "masqAll": DEFS["bool"],
            "markMasqBit": {"type": "integer", "minimum": 0, "maximum": 31},
            "externalSetMarkChain": DEFS["string"],
            "conditionsV4": DEFS["strings"], "conditionsV6": DEFS["strings"],
        },
        {"not": {"required": ["markMasqBit", "externalSetMarkChain"]},
         "x-message": "cannot specify externalSetMarkChain and markMasqBit"},
    ),
    "bandwidth": _plugin(
        {
            "ingressRate": DEFS["uint64"], "egressRate": DEFS["uint64"],
            "ingressBurst": BURST, "egressBurst": BURST,
            "shapedSubnets": {"type": "array", "items": DEFS["cidr"]},
            "unshapedSubnets": {"type": "array", "items": DEFS["cidr"]},
        },
        _together("ingressRate", "ingressBurst", "if rate is set, burst must also be set"),
        _together("ingressBurst", "ingressRate", "if burst is set, rate must also be set"),
        _together("egressRate", "egressBurst", "if rate is set, burst must also be set"),
        _together("egressBurst", "egressRate", "if burst is set, rate must also be set"),
    ),
    "firewall": _plugin({
        # Any other backend value silently falls back to auto-detection in the plugin.
        "backend": {"enum": ["iptables", "firewalld"]},
        "firewalldZone": DEFS["string"],
        "iptablesAdminChainName": {"type": "string", "minLength": 1, "maxLength": 28},
        "ingressPolicy": {"enum": ["open", "same-bridge", "isolated", ""]},
    }),
    "sbr": _plugin({
        "table": DEFS["int"],
        "gateways": {"type": "array", "items": DEFS["ip"], "allOf": [
            {"maxItems": 2, "x-message": "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)"}]},
        "addSourceHints": DEFS["bool"],
    }),
}

RANGE = {
    "type": "object",
    "required": ["subnet"],
    "properties": {"subnet": DEFS["cidr"], "rangeStart": DEFS["ip"], "rangeEnd": DEFS["ip"], "gateway": DEFS["ip"]},
}

IPAM_SCHEMAS = {
    "host-local": {
        "type": "object",
        "properties": {
            "type": DEFS["string"],
            "ranges": {"type": "array", "minItems": 1,
                       "items": {"type": "array", "minItems": 1, "items": RANGE}},
            "subnet": DEFS["cidr"], "rangeStart": DEFS["ip"], "rangeEnd": DEFS["ip"], "gateway": DEFS["ip"],
            "routes": DEFS["routes"], "dataDir": DEFS["string"], "resolvConf": DEFS["string"],
        },
    },
    "static": {
        "type": "object",
        "properties": {
            "type": DEFS["string"],
            "addresses": {"type": "array", "items": {
                "type": "object", "required": ["address"],
                "properties": {"address": DEFS["cidr"], "gateway": DEFS["ip"]},
            }},
            "routes": DEFS["routes"],
            "dns": DEFS["dns"],
        },
    },
    "dhcp": {
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
    },
}

# Chained plugins: they need a prevResult on ADD, so they cannot come first in a list.
META_PLUGINS = ("tuning", "portmap", "bandwidth", "firewall", "sbr", "vrf")

# The CNI versions each plugin accepts in every release that has it (cni-plugins.md §2); the
# ceiling depends on the release and is taken from the installed binary when it is probed.
MINIMUM_SPEC_VERSION = {"bandwidth": "0.3.0", "vrf": "0.3.1", "firewall": "0.4.0"}

# Keys that plugin releases before the given one silently ignore (cni-plugins.md §5). The
# installed binaries only reveal whether they predate v1.6.0 (no spec 1.1.0 in VERSION), so only
# keys from v1.6.0 on can be flagged against an installed binary.
KEY_SINCE = {
    ("bridge", "ipMasqBackend"): "1.6.0",
    ("ptp", "ipMasqBackend"): "1.6.0",
    ("portmap", "backend"): "1.6.0",
    ("macvlan", "bcqueuelen"): "1.6.0",
    ("sbr", "table"): "1.6.0",
    ("dhcp", "priority"): "1.6.0",
    ("bridge", "portIsolation"): "1.7.0",
    ("sbr", "gateways"): "unreleased",
    ("sbr", "addSourceHints"): "unreleased",
}
# bandwidth's shapedSubnets/unshapedSubnets existed only in v1.5.x.
REMOVED_KEYS = {("bandwidth", "shapedSubnets"): "1.6.0", ("bandwidth", "unshapedSubnets"): "1.6.0"}
# The first plugin release that accepts spec 1.1.0; binaries without it are older.
SPEC_1_1_RELEASE = "1.6.0"
