# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Validation of a network configuration list, in three layers:

1. the envelope, by the spec and libcni (name, versions, plugin objects, reserved keys,
   capabilities);
2. each plugin object and IPAM section against the schema of its type (``_schemas``), then the
   plugin's own cross-field rules in Python (CIDR arithmetic, chaining, backends);
3. the network against the other networks of the host (same name, overlapping subnets, one
   bridge with different subnets).

Every finding names a JSON path (``plugins[0].ipam.ranges[0][0].subnet``), says what is wrong
and carries the offending value. Validation is pure: plugin binaries are consulted only through
the ``installed_versions`` callable the caller passes in."""

from __future__ import annotations

import difflib
import functools
import ipaddress
import json
import re
from dataclasses import dataclass, field

from ._errors import ConfigError, PluginNotFoundError
from ._identifiers import check_ifname, check_network_name
from ._result import HIGHEST_VERSION, KNOWN_VERSIONS, select_version, version_key
from ._schemas import (
    FORMATS, IPAM_SCHEMAS, KEY_SINCE, KNOWN_CAPABILITIES, META_PLUGINS, MINIMUM_SPEC_VERSION,
    PLUGIN_SCHEMAS, REMOVED_KEYS, RESERVED_KEYS, RESERVED_PREFIX, SPEC_1_1_RELEASE,
)

ENVELOPE_KEYS = ("cniVersion", "cniVersions", "name", "disableCheck", "disableGC", "loadOnlyInlinedPlugins", "plugins")
FLAG_KEYS = ("disableCheck", "disableGC", "loadOnlyInlinedPlugins")
VETH_PLUGINS = ("bridge", "ptp")
DHCP_OPTION_NAMES = ("dhcp-client-identifier", "subnet-mask", "routers", "host-name", "user-class",
                     "vendor-class-identifier")
_NO_VALUE = object()
_PLAIN_KEY = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_MAC = re.compile(
    r"\A(?:[0-9A-Fa-f]{2}(?P<sep>[:-])(?:[0-9A-Fa-f]{2}(?P=sep)){4,18}[0-9A-Fa-f]{2}"
    r"|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2,9})\Z")


@dataclass
class Finding:
    """One problem: where (JSON path), what, and the offending value."""

    path: str
    message: str
    value: object = _NO_VALUE

    def to_dict(self) -> dict:
        result = {"path": self.path, "message": self.message}
        if self.value is not _NO_VALUE:
            result["value"] = self.value
        return result

    def __str__(self) -> str:
        value = () if self.value is _NO_VALUE else (self.value,)
        return str(ConfigError(self.path, self.message, *value))


@dataclass
class ValidationReport:
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def error(self, path: str, message: str, value: object = _NO_VALUE) -> None:
        self.errors.append(Finding(path, message, value))

    def warn(self, path: str, message: str, value: object = _NO_VALUE) -> None:
        self.warnings.append(Finding(path, message, value))

    def to_dict(self) -> dict:
        return {"errors": [f.to_dict() for f in self.errors], "warnings": [f.to_dict() for f in self.warnings]}

    def summary(self) -> str:
        return "; ".join(str(f) for f in self.errors)


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


# --- parsing text -------------------------------------------------------------------------------

def parse_conflist_text(text: str | bytes) -> tuple:
    """Parse JSON text as Go would read it, returning ``(data, report)``.

    Duplicate keys are reported: Go keeps the last one silently, except in tuning's ``sysctl``,
    which rejects them. A document that is not JSON is an error at the root."""
    report = ValidationReport()
    duplicates = {}
    keep_alive = []

    def pairs_hook(pairs):
        obj = {}
        seen = []
        for key, value in pairs:
            if key in obj:
                seen.append(key)
            obj[key] = value
        if seen:
            keep_alive.append(obj)
            duplicates[id(obj)] = seen
        return obj

    try:
        data = json.loads(text, object_pairs_hook=pairs_hook)
    except ValueError as exc:
        report.error("", f"is not valid JSON: {exc}")
        return None, report
    if duplicates:
        _report_duplicates(data, [], duplicates, report)
    return data, report


def _report_duplicates(node, parts, duplicates, report) -> None:
    if isinstance(node, dict):
        for key in duplicates.get(id(node), ()):
            path = json_path(parts + [key])
            if len(parts) == 3 and parts[0] == "plugins" and parts[2] == "sysctl":
                report.error(path, "duplicated sysctl keys are not allowed (the tuning plugin rejects them)")
            else:
                report.warn(path, "key appears more than once; the plugin keeps only the last value")
        for key, value in node.items():
            _report_duplicates(value, parts + [key], duplicates, report)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _report_duplicates(value, parts + [index], duplicates, report)


# --- formats, with Go's parsing rules -------------------------------------------------------------

def _is_ip(value: str) -> bool:
    # Python's ipaddress rejects leading-zero octets like Go >= 1.17; Go has no IPv6 zones here.
    if not isinstance(value, str) or "%" in value:
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def parse_cidr(value: str):
    """``ipaddress.ip_interface`` for a Go-parsable CIDR, else None."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    address, prefix = value.split("/")
    if not _is_ip(address) or not prefix.isdigit() or (len(prefix) > 1 and prefix[0] == "0"):
        return None
    try:
        return ipaddress.ip_interface(value)
    except ValueError:
        return None


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
    "ip": _is_ip,
    "mac": lambda v: bool(_MAC.match(v)) and len(re.sub(r"[:.\-]", "", v)) in (12, 16, 40),
    "ifname": _is_ifname,
    "dhcp-option": _is_dhcp_option,
}


# --- compiled schemas (jsonschema imported lazily, compiled once per process) -------------------

_LOWER_KEYS: dict = {}


def _dependent_required(validator, dependencies, instance, _schema):
    """Draft 2019-09's dependentRequired, for jsonschema before 4.0 (RHEL 9 and Ubuntu 22.04 ship
    3.2, whose newest draft is 7)."""
    from jsonschema.exceptions import ValidationError  # pylint: disable=import-outside-toplevel

    if not validator.is_type(instance, "object"):
        return
    for present, needed in dependencies.items():
        for name in needed:
            if present in instance and name not in instance:
                yield ValidationError(f"{name!r} is a dependency of {present!r}")


@functools.lru_cache(maxsize=None)
def _validator_class() -> tuple:
    """The jsonschema validator class with Go's idea of an integer, and our format checker."""
    import jsonschema  # pylint: disable=import-outside-toplevel

    base = getattr(jsonschema, "Draft202012Validator", None)
    keywords = {}
    if base is None:
        base = jsonschema.Draft7Validator
        keywords["dependentRequired"] = _dependent_required

    def is_go_integer(_checker, instance):
        return isinstance(instance, int) and not isinstance(instance, bool)

    type_checker = base.TYPE_CHECKER.redefine("integer", is_go_integer)
    checker = jsonschema.FormatChecker(formats=())
    for name, check in FORMAT_CHECKS.items():
        # Formats apply to strings only; the "type" keyword reports anything else.
        checker.checks(name)(lambda value, check=check: not isinstance(value, str) or check(value))
    return jsonschema.validators.extend(base, validators=keywords, type_checker=type_checker), checker


@functools.lru_cache(maxsize=None)
def _compiled(kind: str, name: str):
    """The validator of a plugin or IPAM type's schema, built once per process."""
    cls, checker = _validator_class()
    schema = PLUGIN_SCHEMAS[name] if kind == "plugin" else IPAM_SCHEMAS[name]
    return cls(schema, format_checker=checker)


# --- jsonschema errors -> findings -----------------------------------------------------------------

_TYPE_WORDS = {"integer": "an integer", "boolean": "a boolean (true or false, not a string)",
               "string": "a string", "object": "an object", "array": "a list", "number": "a number"}


def _custom_message(schema: dict, schema_path) -> str | None:
    message = schema.get("x-message")
    node = schema
    for key in list(schema_path)[:-1]:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(node, dict) and "x-message" in node:
            message = node["x-message"]
    return message


def _describe(error) -> tuple:
    """(extra path key or None, message) for one jsonschema error."""
    kind = error.validator
    value = error.instance
    if kind == "type":
        expected = error.validator_value
        word = _TYPE_WORDS.get(expected, expected)
        if expected == "integer" and isinstance(value, float):
            return None, f"must be {word}; Go rejects a number with a fraction or exponent like {value!r}"
        return None, f"must be {word}"
    if kind == "required":
        missing = next((k for k in error.validator_value if k not in value), None)
        return missing, "is required"
    if kind == "enum":
        return None, "must be one of " + ", ".join(json.dumps(v) for v in error.validator_value)
    if kind == "format":
        return None, f"is not {FORMATS.get(error.validator_value, error.validator_value)}"
    if kind == "minimum":
        return None, f"must be at least {error.validator_value}"
    if kind == "maximum":
        return None, f"must be at most {error.validator_value}"
    if kind == "minItems":
        return None, "must not be empty" if error.validator_value == 1 else f"needs at least {error.validator_value} items"
    if kind == "maxItems":
        return None, f"may hold at most {error.validator_value} items"
    if kind == "minLength":
        return None, "must not be empty"
    if kind == "maxLength":
        return None, f"must be at most {error.validator_value} characters long"
    if kind == "dependentRequired":
        missing = next(iter(k for deps in error.validator_value.values() for k in deps if k not in value), None)
        return missing, "is required"
    return None, error.message


def _schema_findings(validator, instance: dict, base: list, report: ValidationReport) -> None:
    schema = validator.schema
    already = {f.path for f in report.errors}  # the envelope layer has spoken about these
    for error in validator.iter_errors(instance):
        extra, message = _describe(error)
        if error.validator != "type":
            message = _custom_message(schema, error.absolute_schema_path) or message
        parts = base + list(error.absolute_path)
        value = error.instance
        if extra is not None:
            parts.append(extra)
        if extra is not None or isinstance(value, dict):
            value = _NO_VALUE  # the path names the object; repeating all of it helps nobody
        path = json_path(parts)
        if path not in already:
            report.error(path, message, value)


# --- key linting: Go's case-insensitive matching and silently ignored keys ------------------------

def _lower_keys(properties: dict) -> dict:
    lowered = _LOWER_KEYS.get(id(properties))
    if lowered is None:
        lowered = {k.lower(): k for k in properties}
        _LOWER_KEYS[id(properties)] = lowered
    return lowered


def _lint_keys(instance, schema: dict, parts: list, what: str, report: ValidationReport, skip=()):
    """Warn about keys the plugin would read differently or not at all; return the instance as
    Go sees it (case variants renamed, nulls dropped), copying only when something changes."""
    if isinstance(instance, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return instance
        linted = [_lint_keys(v, items, parts + [i], what, report) for i, v in enumerate(instance)]
        return linted if any(a is not b for a, b in zip(linted, instance)) else instance
    properties = schema.get("properties")
    if not isinstance(instance, dict) or properties is None:
        return instance
    result = instance
    if "additionalProperties" not in schema:
        for key in instance:
            if key in properties or key in skip or key.startswith(RESERVED_PREFIX):
                continue
            canonical = _lower_keys(properties).get(key.lower())
            if canonical:
                report.warn(json_path(parts + [key]),
                            f"the {what} reads this key as '{canonical}' (Go matches keys case-insensitively); "
                            f"write '{canonical}'")
                if canonical not in instance:
                    result = dict(result) if result is instance else result
                    result[canonical] = result.pop(key)
                continue
            close = difflib.get_close_matches(key, list(properties), n=1, cutoff=0.75)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            report.warn(json_path(parts + [key]), f"unknown key: the {what} ignores it{hint}")
    for key, subschema in properties.items():
        if key not in result:
            continue
        value = result[key]
        if value is None:
            report.warn(json_path(parts + [key]), "is null, which leaves the plugin's default in place")
            result = dict(result) if result is instance else result
            del result[key]
            continue
        linted = _lint_keys(value, subschema, parts + [key], what, report)
        if linted is not value:
            result = dict(result) if result is instance else result
            result[key] = linted
    return result


# --- layer 1: envelope ----------------------------------------------------------------------------

def _check_version_string(value, path: str, report: ValidationReport) -> bool:
    if not isinstance(value, str):
        report.error(path, "must be a string", value)
        return False
    try:
        key = version_key(value)
    except ConfigError:
        report.error(path, "is not a version of the form MAJOR.MINOR.PATCH", value)
        return False
    if value in KNOWN_VERSIONS:
        return True
    if key > version_key(HIGHEST_VERSION):
        report.error(path, f"is newer than any CNI version a runtime knows ({HIGHEST_VERSION})", value)
    else:
        report.error(path, "is not a CNI version; known: " + ", ".join(KNOWN_VERSIONS), value)
    return False


def _check_envelope(conf: dict, report: ValidationReport) -> None:
    name = conf.get("name")
    if "name" not in conf:
        report.error("name", "is required: a network needs a name")
    else:
        try:
            check_network_name(name)
        except ConfigError as exc:
            report.error("name", exc.message, name)
    if "cniVersion" in conf:
        _check_version_string(conf["cniVersion"], "cniVersion", report)
    else:
        report.warn("cniVersion", "is not set: plugins then read the configuration as version 0.1.0")
    versions = conf.get("cniVersions")
    if versions is not None:
        if not isinstance(versions, list) or not versions:
            report.error("cniVersions", "must be a non-empty list of version strings", versions)
        else:
            for index, item in enumerate(versions):
                if isinstance(item, str) and item not in KNOWN_VERSIONS and _version_or_none(item) and \
                        version_key(item) > version_key(HIGHEST_VERSION):
                    report.warn(f"cniVersions[{index}]", f"is newer than {HIGHEST_VERSION}; runtimes skip it", item)
                else:
                    _check_version_string(item, f"cniVersions[{index}]", report)
    for key in FLAG_KEYS:
        value = conf.get(key)
        if key not in conf or isinstance(value, bool):
            continue
        if isinstance(value, str) and value.lower() in ("true", "false"):
            report.warn(key, "is a string; libcni accepts it, but write a JSON boolean", value)
        else:
            report.error(key, "must be a boolean", value)
    for key in conf:
        if key not in ENVELOPE_KEYS:
            close = difflib.get_close_matches(key, ENVELOPE_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'? (the envelope's keys are case-sensitive)" if close else ""
            report.warn(json_path([key]), f"unknown key in the network list{hint}")
    plugins = conf.get("plugins")
    if plugins is None:
        if conf.get("loadOnlyInlinedPlugins") is True:
            report.error("plugins", "is required when loadOnlyInlinedPlugins is true")
        else:
            report.warn("plugins", f"is not set: libcni then loads <conf_dir>/{name}/*.conf only")
        return
    if not isinstance(plugins, list) or not plugins:
        report.error("plugins", "must be a non-empty list of plugin objects", plugins)
        return
    for index, plugin in enumerate(plugins):
        _check_plugin_envelope(plugin, index, conf, report)


def _version_or_none(value: str):
    try:
        return version_key(value)
    except ConfigError:
        return None


def _check_plugin_envelope(plugin, index: int, conf: dict, report: ValidationReport) -> None:
    path = f"plugins[{index}]"
    if not isinstance(plugin, dict):
        report.error(path, "must be an object", plugin)
        return
    plugin_type = plugin.get("type")
    if "type" not in plugin:
        report.error(f"{path}.type", "is required: it names the plugin binary")
    elif not isinstance(plugin_type, str) or not plugin_type:
        report.error(f"{path}.type", "must be a non-empty string", plugin_type)
    elif "/" in plugin_type or "\\" in plugin_type or plugin_type in (".", ".."):
        report.error(f"{path}.type", "must be a file name, without '/' or '\\'", plugin_type)
    for key in plugin:
        if key in RESERVED_KEYS or key.startswith(RESERVED_PREFIX):
            report.error(json_path(["plugins", index, key]),
                         "is reserved: the runtime generates it; it must not be written in a configuration file")
    for key in ("name", "cniVersion"):
        if key in plugin and key in conf and plugin[key] != conf[key]:
            report.warn(f"{path}.{key}", f"differs from the list's {key}, which the runtime injects instead",
                        plugin[key])
    capabilities = plugin.get("capabilities")
    if "capabilities" in plugin:
        if not isinstance(capabilities, dict):
            report.error(f"{path}.capabilities", "must be a map of capability names to booleans", capabilities)
        else:
            for name, enabled in capabilities.items():
                cpath = json_path(["plugins", index, "capabilities", name])
                if not isinstance(enabled, bool):
                    report.error(cpath, "must be a boolean", enabled)
                if name not in KNOWN_CAPABILITIES:
                    close = difflib.get_close_matches(name, KNOWN_CAPABILITIES, n=1, cutoff=0.6)
                    hint = f"; did you mean '{close[0]}'?" if close else ""
                    report.warn(cpath, f"is not a capability of the CNI conventions{hint}")
    ipam = plugin.get("ipam")
    if "ipam" in plugin and not isinstance(ipam, dict):
        report.error(f"{path}.ipam", "must be an object", ipam)
    elif isinstance(ipam, dict) and "type" in ipam and (not isinstance(ipam["type"], str) or "/" in ipam["type"]):
        report.error(f"{path}.ipam.type", "must be a plugin file name", ipam["type"])


# --- layer 2: per plugin -----------------------------------------------------------------------------

def _plugin_types(conf: dict) -> list:
    """[(index, plugin, type, ipam type or None)] for the well-formed plugin objects."""
    result = []
    for index, plugin in enumerate(_list_of(conf.get("plugins"))):
        if isinstance(plugin, dict) and isinstance(plugin.get("type"), str) and plugin["type"]:
            ipam = plugin.get("ipam")
            ipam_type = ipam.get("type") if isinstance(ipam, dict) and isinstance(ipam.get("type"), str) and ipam.get("type") else None
            result.append((index, plugin, plugin["type"], ipam_type))
    return result


def _check_plugins(conf: dict, version: str, report: ValidationReport) -> list:
    """Schema and semantic checks of every plugin and IPAM section; returns the host-local
    subnets for the cross-network checks."""
    seen = []
    subnets = []
    for position, (index, plugin, plugin_type, ipam_type) in enumerate(_plugin_types(conf)):
        base = ["plugins", index]
        schema = PLUGIN_SCHEMAS.get(plugin_type)
        if schema is None:
            report.warn(json_path(base + ["type"]),
                        "is not a reference plugin: only the envelope rules were checked", plugin_type)
            go_view = plugin
        else:
            go_view = _lint_keys(plugin, schema, base, f"{plugin_type} plugin", report, skip=RESERVED_KEYS)
            _schema_findings(_compiled("plugin", plugin_type), go_view, base, report)
        if ipam_type:
            go_view = dict(go_view, ipam=_check_ipam(go_view["ipam"], ipam_type, base + ["ipam"], report))
            subnets.extend(_check_ipam_semantics(go_view, ipam_type, base, version, report))
        if position == 0 and plugin_type in META_PLUGINS:
            report.error(json_path(base + ["type"]),
                         f"{plugin_type} is a chained plugin: it needs a previous plugin's result and cannot come first",
                         plugin_type)
        minimum = MINIMUM_SPEC_VERSION.get(plugin_type)
        if minimum and _version_or_none(version or "0.1.0") and version_key(version) < version_key(minimum):
            report.error("cniVersion", f"plugin {plugin_type} ({json_path(base)}) needs cniVersion {minimum} or newer",
                         version)
        for (owner, key), removed in REMOVED_KEYS.items():
            if owner == plugin_type and key in go_view:
                report.warn(json_path(base + [key]),
                            f"only plugin releases before v{removed} read this key; newer ones ignore it")
        check = _SEMANTIC_CHECKS.get(plugin_type)
        if check:
            check(go_view, base, position, seen, report)
        seen.append((plugin_type, go_view))
    return subnets


def _check_ipam_semantics(plugin: dict, ipam_type: str, base: list, version: str, report: ValidationReport) -> list:
    if ipam_type == "host-local":
        return _check_host_local(plugin, base, version, report)
    if ipam_type == "static":
        _check_static(plugin, base, version, report)
    elif ipam_type == "dhcp":
        report.warn(json_path(base + ["ipam", "type"]),
                    "the dhcp IPAM plugin needs its daemon running on the host ('dhcp daemon', unit cni-dhcp.socket)")
    return []


def _check_ipam(ipam: dict, ipam_type: str, base: list, report: ValidationReport) -> dict:
    schema = IPAM_SCHEMAS.get(ipam_type)
    if schema is None:
        report.warn(json_path(base + ["type"]), "is not a reference IPAM plugin: its keys were not checked", ipam_type)
        return ipam
    go_view = _lint_keys(ipam, schema, base, f"{ipam_type} IPAM plugin", report)
    _schema_findings(_compiled("ipam", ipam_type), go_view, base, report)
    return go_view


def _list_of(value) -> list:
    """``value`` if it is a list, else empty: a wrong type is the schema's finding, and the
    semantic checks after it must not crash on it."""
    return value if isinstance(value, list) else []


def _map_of(value) -> dict:
    """``value`` if it is an object, else empty (see _list_of)."""
    return value if isinstance(value, dict) else {}


def _ipam_of(plugin: dict):
    ipam = plugin.get("ipam")
    return ipam if isinstance(ipam, dict) else {}


def _check_bridge(plugin, base, _position, _seen, report) -> None:
    for index, trunk in enumerate(_list_of(plugin.get("vlanTrunk"))):
        if isinstance(trunk, dict) and _is_int(trunk.get("minID")) and _is_int(trunk.get("maxID")) \
                and trunk["minID"] > trunk["maxID"]:
            report.error(json_path(base + ["vlanTrunk", index]), "minID is greater than maxID", trunk)
    if plugin.get("ipMasq") is True and not _ipam_of(plugin).get("type"):
        report.warn(json_path(base + ["ipMasq"]), "has no effect without an IPAM section with a type")


def _check_main_needing_ipam_unless_chained(plugin, base, position, _seen, report) -> None:
    if position == 0 and not _ipam_of(plugin).get("type"):
        report.error(json_path(base + ["ipam"]),
                     "ipvlan needs an IPAM section with a type unless it is chained after a plugin that returns IPs")
    _warn_default_master(plugin, base, report)


def _warn_default_master(plugin, base, report) -> None:
    if "master" not in plugin:
        report.warn(json_path(base + ["master"]),
                    "is not set: the plugin uses the interface of the default route, and fails on hosts without one")


def _check_macvlan(plugin, base, _position, _seen, report) -> None:
    _warn_default_master(plugin, base, report)


def _check_vlan(plugin, base, _position, _seen, report) -> None:
    if "vlanId" not in plugin:
        report.warn(json_path(base + ["vlanId"]), "is not set: the plugin then creates VLAN 0")


def _check_host_device(plugin, base, _position, _seen, report) -> None:
    selectors = [k for k in ("device", "hwaddr", "kernelpath", "pciBusID") if k in plugin]
    if len(selectors) > 1:
        report.warn(json_path(base), f"several device selectors ({', '.join(selectors)}): only "
                    f"{selectors[0]} is used (precedence device > hwaddr > kernelpath > pciBusID)")


def _check_tuning(plugin, base, _position, _seen, report) -> None:
    sysctl = plugin.get("sysctl")
    if not isinstance(sysctl, dict):
        return
    for key in sysctl:
        if not isinstance(key, str) or not re.match(r"\Anet[./]", key) or ".." in key:
            report.error(json_path(base + ["sysctl", key]), "invalid net sysctl key: it must start with 'net.' or 'net/'", key)


def _conditions_style(conditions) -> str | None:
    if isinstance(conditions, list) and conditions and isinstance(conditions[0], str) and conditions[0]:
        return "iptables" if conditions[0][0] in "-!" else "nftables"
    return None


def _check_portmap(plugin, base, _position, _seen, report) -> None:
    if _map_of(plugin.get("capabilities")).get("portMappings") is not True:
        report.warn(json_path(base + ["capabilities"]),
                    "has no portMappings: true, so the runtime never passes port mappings and portmap does nothing")
    backend = plugin.get("backend")
    for key in ("conditionsV4", "conditionsV6"):
        style = _conditions_style(plugin.get(key))
        if style == "nftables" and backend != "nftables":
            report.error(json_path(base + [key]),
                         "holds nftables-style conditions, which need backend: nftables", plugin[key])
        elif style == "iptables" and backend == "nftables":
            report.error(json_path(base + [key]),
                         "holds iptables-style conditions, which the nftables backend cannot use", plugin[key])
    if backend == "nftables" and "externalSetMarkChain" in plugin:
        report.error(json_path(base + ["externalSetMarkChain"]), "is iptables-only and cannot be used with backend: nftables",
                     plugin["externalSetMarkChain"])


def _check_bandwidth(plugin, base, _position, seen, report) -> None:
    previous = next((t for t, _p in reversed(seen) if t not in META_PLUGINS), None)
    if previous in PLUGIN_SCHEMAS and previous not in VETH_PLUGINS:
        report.warn(json_path(base + ["type"]),
                    f"bandwidth shapes veth pairs only; after {previous} it fails with 'no veth peer'", "bandwidth")


def _check_firewall(plugin, base, _position, seen, report) -> None:
    if plugin.get("ingressPolicy") in ("same-bridge", "isolated") and not any(t == "bridge" for t, _p in seen):
        report.error(json_path(base + ["ingressPolicy"]),
                     "same-bridge and isolated need the firewall plugin chained after bridge", plugin["ingressPolicy"])


def _check_sbr(plugin, base, _position, _seen, report) -> None:
    gateways = plugin.get("gateways")
    if isinstance(gateways, list):
        families = [ipaddress.ip_address(g).version for g in gateways if _is_ip(g)]
        if len(families) != len(set(families)):
            report.error(json_path(base + ["gateways"]), "holds two gateways of one IP family; give one IPv4 and one IPv6 at most",
                         gateways)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_SEMANTIC_CHECKS = {
    "bridge": _check_bridge, "ipvlan": _check_main_needing_ipam_unless_chained, "macvlan": _check_macvlan,
    "vlan": _check_vlan, "host-device": _check_host_device, "tuning": _check_tuning,
    "portmap": _check_portmap, "bandwidth": _check_bandwidth, "firewall": _check_firewall, "sbr": _check_sbr,
}


# --- IPAM semantics ------------------------------------------------------------------------------

@dataclass
class Subnet:
    """A host-local range's subnet, kept for the cross-network checks."""

    network: object
    path: str


def _range_sets(ipam: dict, base: list) -> list:
    """[(path parts, [range dicts with their path parts])]: legacy subnet first, as host-local."""
    sets = []
    if "subnet" in ipam:
        legacy = {k: ipam[k] for k in ("subnet", "rangeStart", "rangeEnd", "gateway") if k in ipam}
        sets.append([(base, legacy)])
    for set_index, range_set in enumerate(_list_of(ipam.get("ranges"))):
        if isinstance(range_set, list):
            sets.append([(base + ["ranges", set_index, i], r) for i, r in enumerate(range_set) if isinstance(r, dict)])
    return sets


def _check_range(parts: list, item: dict, report: ValidationReport):
    """Check one range; return its network, or None if its subnet is unusable."""
    iface = parse_cidr(item.get("subnet"))
    if iface is None:
        return None  # the schema already reported it
    network = iface.network
    subnet_path = json_path(parts + ["subnet"])
    if iface.ip != network.network_address:
        report.error(subnet_path, f"has host bits set; the network address is {network.network_address}/{network.prefixlen}",
                     item["subnet"])
        return None
    if network.max_prefixlen - network.prefixlen < 2:
        report.error(subnet_path, f"is too small to allocate from (at most /{network.max_prefixlen - 2})", item["subnet"])
        return None
    bounds = {}
    for key in ("rangeStart", "rangeEnd", "gateway"):
        text = item.get(key)
        if not _is_ip(text):
            continue
        address = ipaddress.ip_address(text)
        path = json_path(parts + [key])
        if address.version != network.version:
            report.error(path, f"is not of the same IP family as subnet {network}", text)
        elif address not in network:
            if key == "gateway" and network.version == 6:
                report.warn(path, f"is outside subnet {network}", text)
            else:
                report.error(path, f"is outside subnet {network}", text)
        else:
            bounds[key] = address
    if "rangeStart" in bounds and "rangeEnd" in bounds and bounds["rangeStart"] > bounds["rangeEnd"]:
        report.error(json_path(parts + ["rangeStart"]), f"is after rangeEnd {bounds['rangeEnd']}", item["rangeStart"])
    return network


def _check_host_local(plugin: dict, base: list, version: str, report: ValidationReport) -> list:
    """host-local's range rules; returns the subnets for the cross-network checks."""
    ipam = _ipam_of(plugin)
    ipam_base = base + ["ipam"]
    sets = _range_sets(ipam, ipam_base)
    if not sets and _map_of(plugin.get("capabilities")).get("ipRanges") is not True:
        report.error(json_path(ipam_base + ["ranges"]), "is required: no IP ranges specified (give ranges or subnet)")
        return []
    subnets = []
    set_networks = []
    for range_set in sets:
        networks = []
        for parts, item in range_set:
            network = _check_range(parts, item, report)
            if network is None:
                continue
            path = json_path(parts + ["subnet"])
            for other, other_path in networks:
                if other.version != network.version:
                    report.error(path, f"mixes address families in one range set (with {other_path})", item["subnet"])
                elif network.overlaps(other):
                    report.error(path, f"overlaps {other} ({other_path}) in the same range set", item["subnet"])
            networks.append((network, path))
            subnets.append(Subnet(network, path))
        for earlier_index, earlier in enumerate(set_networks):
            if any(mine.overlaps(theirs) for mine, _path in networks for theirs, _other in earlier
                   if mine.version == theirs.version):
                report.error(networks[0][1], f"range set overlaps range set {earlier_index}", str(networks[0][0]))
        if networks:
            set_networks.append(networks)
    if version and _version_or_none(version) and version_key(version) < version_key("0.3.0"):
        families = [nets[0][0].version for nets in set_networks]
        if len(families) != len(set(families)):
            report.error("cniVersion", f"{version} does not support more than 1 address per family; use 0.3.0 or newer", version)
    return subnets


def _check_static(plugin: dict, base: list, version: str, report: ValidationReport) -> None:
    addresses = _ipam_of(plugin).get("addresses")
    if not isinstance(addresses, list):
        return
    families = []
    for index, entry in enumerate(addresses):
        if not isinstance(entry, dict):
            continue
        iface = parse_cidr(entry.get("address"))
        if iface is None:
            continue
        families.append(iface.version)
        gateway = entry.get("gateway")
        if _is_ip(gateway) and ipaddress.ip_address(gateway) not in iface.network:
            report.warn(json_path(base + ["ipam", "addresses", index, "gateway"]),
                        f"is outside the address's subnet {iface.network}", gateway)
    if version and _version_or_none(version) and version_key(version) < version_key("0.3.0") \
            and len(families) != len(set(families)):
        report.error("cniVersion", f"{version} does not support more than 1 address per family; use 0.3.0 or newer", version)


# --- versions against the installed binaries -----------------------------------------------------

def _check_installed(conf: dict, installed_versions, report: ValidationReport) -> str:
    """Resolve every plugin and IPAM type; return the version the list would run at."""
    supported = []
    owners = []
    for index, _plugin, plugin_type, ipam_type in _plugin_types(conf):
        for path, name in ((f"plugins[{index}].type", plugin_type), (f"plugins[{index}].ipam.type", ipam_type)):
            if not name:
                continue
            try:
                versions = list(installed_versions(name))
            except PluginNotFoundError as exc:
                report.error(path, str(exc), name)
                continue
            supported.append(versions)
            owners.append((path, name, versions))
            for key, since in KEY_SINCE.items():
                if key[0] == name and _has_key(conf, index, key[1], name == ipam_type) and \
                        "1.1.0" not in versions and version_key(since.replace("unreleased", "99.0.0")) >= version_key(SPEC_1_1_RELEASE):
                    where = ["plugins", index] + (["ipam"] if name == ipam_type else []) + [key[1]]
                    report.warn(json_path(where), f"the installed {name} plugin predates v{SPEC_1_1_RELEASE} (it does not "
                                f"support CNI 1.1.0) and ignores this key, which arrived in {_release(since)}")
    version = _list_version(conf, supported)
    if version and _version_or_none(version) is not None:
        for path, name, versions in owners:
            if (version or "0.1.0") not in versions:
                report.error("cniVersion", f"the installed {name} plugin ({path}) does not support it; it supports "
                             + ", ".join(versions), version)
    return version


def _release(since: str) -> str:
    return "an unreleased version" if since == "unreleased" else f"v{since}"


def _has_key(conf: dict, index: int, key: str, in_ipam: bool) -> bool:
    plugin = conf["plugins"][index]
    return key in (_ipam_of(plugin) if in_ipam else plugin)


def _list_version(conf: dict, plugin_versions=None) -> str:
    version = conf.get("cniVersion", "")
    versions = conf.get("cniVersions")
    if not isinstance(version, str) or _version_or_none(version or "0.1.0") is None:
        return ""
    if not isinstance(versions, list) or not all(isinstance(v, str) and _version_or_none(v) for v in versions):
        versions = None
    return select_version(version, versions, plugin_versions)


# --- layer 3: across the host --------------------------------------------------------------------

def _libcni_order(source: str) -> tuple:
    return (0 if source.endswith(".conflist") else 1, source)


def _bridge_subnets(conf: dict) -> dict:
    """{bridge name: frozenset of host-local subnets} of a network's bridge plugins."""
    result = {}
    for plugin in conf.get("plugins") or []:
        if isinstance(plugin, dict) and plugin.get("type") == "bridge":
            bridge = plugin.get("bridge") or "cni0"
            result[bridge] = frozenset(str(s.network) for s in _subnets_of(plugin))
    return result


def _subnets_of(plugin: dict) -> list:
    ipam = _ipam_of(plugin)
    if ipam.get("type") != "host-local":
        return []
    subnets = []
    for range_set in _range_sets(ipam, []):
        for parts, item in range_set:
            iface = parse_cidr(item.get("subnet"))
            if iface is not None:
                subnets.append(Subnet(iface.network, json_path(parts + ["subnet"])))
    return subnets


def _check_host(conf: dict, own_subnets: list, source, other_networks, report: ValidationReport) -> None:
    name = conf.get("name")
    own_bridges = _bridge_subnets(conf)
    for other in other_networks:
        other_source = other.source or "(unnamed)"
        if source and other.source == source:
            continue
        if other.name == name:
            if source and _libcni_order(other.source) < _libcni_order(source):
                report.error("name", f"is already defined in {other_source}, which libcni reads first: "
                             "this file would be ignored", name)
            elif source:
                report.warn("name", f"is also defined in {other_source}; libcni reads this file first and "
                            "ignores that one", name)
            else:
                report.warn("name", f"is also defined in {other_source}", name)
            continue
        other_subnets = [s for p in other.plugins if isinstance(p, dict) for s in _subnets_of(p)]
        for mine in own_subnets:
            for theirs in other_subnets:
                if mine.network.version == theirs.network.version and mine.network.overlaps(theirs.network):
                    report.error(mine.path, f"overlaps {theirs.network} of network '{other.name}' ({other_source})",
                                 str(mine.network))
        for bridge, theirs in _bridge_subnets({"plugins": other.plugins}).items():
            mine = own_bridges.get(bridge)
            if mine is not None and theirs and mine and mine != theirs:
                report.error("plugins", f"bridge '{bridge}' is also used by network '{other.name}' ({other_source}) "
                             f"with other subnets ({', '.join(sorted(theirs))}); the bridge cannot hold both gateways",
                             bridge)


# --- entry point ---------------------------------------------------------------------------------

def validate_network_list(conf, *, installed_versions=None, other_networks=(), source: str | None = None,
                          report: ValidationReport | None = None) -> ValidationReport:
    """Validate one network configuration list (a dict as parsed from JSON).

    ``installed_versions``: ``plugin_type -> supported versions``, raising PluginNotFoundError,
    or None to skip the checks against installed binaries. ``other_networks``: the host's other
    networks (objects with ``name``, ``source``, ``plugins``, as ``_conflist.load_conf_dir``
    returns them); ``source`` is the file this list is (or will be) read from. ``report`` lets
    a caller add to findings it already has (e.g. from ``parse_conflist_text``)."""
    report = report if report is not None else ValidationReport()
    if not isinstance(conf, dict):
        report.error("", "the network configuration must be a JSON object", conf)
        return report
    _check_envelope(conf, report)
    if installed_versions is not None:
        version = _check_installed(conf, installed_versions, report)
    else:
        version = _list_version(conf)
    subnets = _check_plugins(conf, version, report)
    if other_networks:
        _check_host(conf, subnets, source, other_networks, report)
    return report


def validate_text(text: str | bytes, **kwargs) -> tuple:
    """Parse and validate conflist text: ``(data or None, report)``."""
    data, report = parse_conflist_text(text)
    if data is None:
        return None, report
    return data, validate_network_list(data, report=report, **kwargs)
