# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The building blocks of the reference plugins' JSON Schemas (each plugin's own schema lives in
its file under ``_plugin_rules``), as Python data.

Conventions, read by ``_validate``:
- ``format`` names one of FORMATS (CIDR, IP, MAC, interface name, DHCP option); the checks
  themselves live in ``_plugin_rules._common`` so that Go's parsing rules have one home.
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
        # Names are carried through to the result; a warning says resolvers need addresses.
        "nameservers": DEFS["strings"],
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

# Keys every plugin object may carry (types.NetConf). ``args`` is documented in the CNI
# conventions for static configuration (args.cni.ips, labels); the runtime-generated keys
# (runtimeConfig, prevResult, cni.dev/*) are the envelope check's business.
COMMON_PLUGIN_KEYS = {
    "type": DEFS["string"],
    "name": DEFS["string"],
    "cniVersion": DEFS["string"],
    "capabilities": DEFS["capabilities"],
    "ipam": DEFS["ipam_ref"],
    "dns": DEFS["dns"],
    "args": {"type": "object", "additionalProperties": True},
}
RESERVED_KEYS = ("runtimeConfig", "prevResult")
RESERVED_PREFIX = "cni.dev/"

# Capability names of CONVENTIONS.md; others are reported as warnings.
KNOWN_CAPABILITIES = (
    "portMappings", "bandwidth", "ipRanges", "ips", "mac", "deviceID", "dns", "infinibandGUID",
    "aliases", "cgroupPath",
)


def requires_ipam_type(plugin: str) -> dict:
    return {
        "required": ["ipam"],
        "properties": {"ipam": {"required": ["type"], "properties": {"type": {"minLength": 1}}}},
        "x-message": f"{plugin} needs an IPAM section with a type (the plugin fails with "
                     "'no plugin name provided')",
    }


def only_while_true(flag: str, key: str, schema: dict) -> dict:
    """``key`` must follow ``schema`` only while ``flag`` is true: the plugin reads it only then."""
    return {"if": {"required": [flag], "properties": {flag: {"const": True}}}, "then": {"properties": {key: schema}}}


def not_both_true(first: str, second: str, message: str) -> dict:
    return {
        "not": {
            "required": [first, second],
            "properties": {first: {"const": True}, second: {"const": True}},
        },
        "x-message": message,
    }


def together(first: str, second: str, message: str) -> dict:
    """When ``first`` is set to a non-zero value, ``second`` must be too (Go: 0 means unset)."""
    return {
        "if": {"required": [first], "properties": {first: {"type": "integer", "exclusiveMinimum": 0}}},
        "then": {"required": [second], "properties": {second: {"not": {"const": 0}}},
                 "x-message": message},
    }


def plugin_schema(properties: dict, *rules: dict) -> dict:
    schema = {"type": "object", "required": ["type"], "properties": {**COMMON_PLUGIN_KEYS, **properties}}
    if rules:
        schema["allOf"] = list(rules)
    return schema


VLAN_ID = {"type": "integer", "minimum": 0, "maximum": VLAN_MAX}
RANGE = {
    "type": "object",
    "required": ["subnet"],
    "properties": {"subnet": DEFS["cidr"], "rangeStart": DEFS["ip"], "rangeEnd": DEFS["ip"], "gateway": DEFS["ip"]},
}
