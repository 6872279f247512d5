# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Validation of a network configuration list, in three layers:

1. the envelope, by the spec and libcni (name, versions, plugin objects, reserved keys,
   capabilities);
2. each plugin object and IPAM section against the rules of its type, kept one file per plugin
   in ``_plugin_rules`` (its schema, its checks in Python, the releases that brought its keys),
   then the rules between plugins (chaining, two plugins creating one interface);
3. the network against the other networks of the host (same name, overlapping subnets, one
   bridge with different subnets).

Every finding names a JSON path (``plugins[0].ipam.ranges[0][0].subnet``), says what is wrong
and carries the offending value. Validation is pure: plugin binaries are consulted only through
the ``installed_versions`` callable the caller passes in. A rule that only some plugin releases
enforce is an error when the installed binary is known to be one of them, else a warning."""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from dataclasses import dataclass, field

from ._conflist import ENVELOPE_ORDER, FLAG_KEYS, TOO_DEEP, as_libcni_passes, go_json_problem, libcni_order
from ._errors import CNIError, ConfigError
from ._identifiers import check_network_name
from ._plugin_rules.registry import IPAM, PLUGINS, assigned_subnets, host_devices
from ._plugin_rules._common import (
    FORMAT_CHECKS, Context, Releases, is_ip, json_path, list_of, map_of, parse_cidr, release_name, version_or_none,
)
from ._result import HIGHEST_VERSION, KNOWN_VERSIONS, select_version, version_key
from ._schemas import FORMATS, KNOWN_CAPABILITIES, RESERVED_KEYS, RESERVED_PREFIX

__all__ = ("FORMAT_CHECKS", "Finding", "ValidationReport", "coerce_scalars", "json_path", "parse_cidr",
           "parse_conflist_text", "validate_network_list", "validate_text")

_NO_VALUE = object()


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


# --- parsing text -------------------------------------------------------------------------------

def parse_conflist_text(text: str | bytes) -> tuple:
    """Parse JSON text as Go would read it, returning ``(data, report)``.

    Duplicate keys are reported: Go keeps the last one silently, and some plugins refuse them
    in one of their maps (``PluginRules.duplicate_key_errors``). A document that is not JSON is
    an error at the root."""
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
    except RecursionError:
        report.error("", TOO_DEEP)
        return None, report
    problem = go_json_problem(data)
    if problem:
        report.error(problem.path, problem.message, problem.value)
        return None, report
    if duplicates:
        _report_duplicates(data, [], duplicates, report)
    return data, report


def _report_duplicates(node, parts, duplicates, report, refused: str | None = None) -> None:
    """Warn about every repeated key; ``refused``: the error instead, for the keys of a map its
    plugin refuses repeats in."""
    if isinstance(node, dict):
        for key in duplicates.get(id(node), ()):
            path = json_path(parts + [key])
            if refused:
                report.error(path, refused)
            else:
                report.warn(path, "key appears more than once; the plugin keeps only the last value")
        plugin_type = node.get("type") if len(parts) == 2 and parts[0] == "plugins" else None
        rules = PLUGINS.get(plugin_type) if isinstance(plugin_type, str) else None
        for key, value in node.items():
            refuses = rules.duplicate_key_errors.get(key) if rules is not None else None
            _report_duplicates(value, parts + [key], duplicates, report, refuses)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _report_duplicates(value, parts + [index], duplicates, report)


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
    rules = PLUGINS[name] if kind == "plugin" else IPAM[name]
    return cls(rules.schema, format_checker=checker)


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
            return None, (f"must be {word}; the plugin rejects a number with a fraction, or one too large for Go "
                          f"to write without an exponent, like {value!r}")
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


def _schema_findings(validator, instance: dict, base: list, report: ValidationReport) -> list:
    """[(path parts, message, (value,) or ())] of the schema's findings on ``instance``."""
    schema = validator.schema
    already = {f.path for f in report.errors}  # the envelope layer has spoken about these
    findings = []
    for error in validator.iter_errors(instance):
        extra, message = _describe(error)
        if error.validator != "type":
            message = _custom_message(schema, error.absolute_schema_path) or message
        parts = base + list(error.absolute_path)
        value = (error.instance,)
        if extra is not None:
            parts.append(extra)
        if extra is not None or isinstance(error.instance, dict):
            value = ()  # the path names the object; repeating all of it helps nobody
        if json_path(parts) not in already:
            findings.append((parts, message, value))
    return findings


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


def _check_envelope(conf: dict, source, dropin_files, report: ValidationReport) -> None:
    name = conf.get("name")
    if "name" not in conf:
        report.error("name", "is required: a network needs a name")
    else:
        try:
            check_network_name(name)
        except ConfigError as exc:
            report.error("name", exc.message, name)
    versions = conf.get("cniVersions")
    if "cniVersion" in conf:
        _check_version_string(conf["cniVersion"], "cniVersion", report)
    elif not versions:  # with cniVersions, libcni runs the list at the highest of them
        report.warn("cniVersion", "is not set: plugins then read the configuration as version 0.1.0")
    if versions is not None:
        if not isinstance(versions, list) or not versions:
            report.error("cniVersions", "must be a non-empty list of version strings", versions)
        else:
            for index, item in enumerate(versions):
                if isinstance(item, str) and item not in KNOWN_VERSIONS and version_or_none(item) and \
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
        if key not in ENVELOPE_ORDER:
            close = difflib.get_close_matches(key, ENVELOPE_ORDER, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'? (the envelope's keys are case-sensitive)" if close else ""
            report.warn(json_path([key]), f"unknown key in the network list{hint}")
    plugins = conf.get("plugins")
    if plugins is None:
        _check_dropins_only(conf, source, dropin_files, report)
        return
    if not isinstance(plugins, list) or not plugins:
        report.error("plugins", "must be a non-empty list of plugin objects", plugins)
        return
    for index, plugin in enumerate(plugins):
        _check_plugin_envelope(plugin, index, conf, report)


def _check_dropins_only(conf: dict, source, dropin_files, report: ValidationReport) -> None:
    """A list without ``plugins``: libcni loads ``<conf_dir>/<name>/*.conf`` instead, and fails
    when there are none ("no plugin configs found")."""
    name = conf.get("name")
    directory = os.path.join(os.path.dirname(source), str(name)) if source else f"<conf_dir>/{name}"
    if conf.get("loadOnlyInlinedPlugins") is True:
        report.error("plugins", "is required when loadOnlyInlinedPlugins is true")
    elif dropin_files is not None and not dropin_files:
        report.error("plugins", f"is not set, and {directory} holds no *.conf plugin file: libcni cannot load this "
                     "network (no plugin configs found)")
    else:
        report.warn("plugins", f"is not set: libcni then loads {directory}/*.conf only")


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

def _is_plugin_name(value) -> bool:
    return isinstance(value, str) and bool(value) and "/" not in value and "\\" not in value and value not in (".", "..")


def _plugin_types(conf: dict) -> list:
    """[(index, plugin, type, ipam type or None)] for the plugin objects whose type names a binary;
    an IPAM type that cannot name one is None (the envelope check reported it)."""
    result = []
    for index, plugin in enumerate(list_of(conf.get("plugins"))):
        if isinstance(plugin, dict) and _is_plugin_name(plugin.get("type")):
            ipam_type = map_of(plugin.get("ipam")).get("type")
            result.append((index, plugin, plugin["type"], ipam_type if _is_plugin_name(ipam_type) else None))
    return result


def _check_plugins(conf: dict, version: str, releases: dict, on_host: bool, report: ValidationReport) -> list:
    """Schema and checks of every plugin and IPAM section; returns the IPAM subnets for the
    cross-network checks."""
    seen = []
    subnets = []
    previous_main = None
    interface_owner = None
    for position, (index, plugin, plugin_type, ipam_type) in enumerate(_plugin_types(conf)):
        ctx = Context(report, ["plugins", index], version, position, seen=list(seen), previous_main=previous_main,
                      releases=releases.get(plugin_type), on_host=on_host, subnets=subnets)
        rules = PLUGINS.get(plugin_type)
        go_view = _check_rules(plugin, rules, "plugin", plugin_type, ctx) if rules else plugin
        if rules is None:
            report.warn(ctx.path("type"), "is not a reference plugin: only the envelope rules were checked", plugin_type)
        if ipam_type:
            ipam_ctx = Context(report, ctx.base, version, position, seen=ctx.seen, releases=releases.get(ipam_type),
                               on_host=on_host, subnets=subnets)
            go_view = dict(go_view, ipam=_check_ipam(go_view, plugin_type, ipam_type, ipam_ctx))
        if rules is not None:
            creates = rules.creates_interface_at(position, ipam_type)
            _check_chaining(plugin_type, rules, ctx, interface_owner if creates else None)
            if creates:
                interface_owner = interface_owner or (plugin_type, ctx.path())
            if not rules.chained:
                previous_main = plugin_type
            if rules.check:
                rules.check(go_view, ctx)
        else:
            previous_main = None
        seen.append((plugin_type, go_view))
    return subnets


def _check_rules(instance: dict, rules, kind: str, name: str, ctx: Context) -> dict:
    """Lint the keys, apply the schema and report keys the installed release does not read;
    return the object as Go reads it."""
    what = f"{name} {'plugin' if kind == 'plugin' else 'IPAM plugin'}"
    base = ctx.base + ([] if kind == "plugin" else ["ipam"])
    go_view = _lint_keys(instance, rules.schema, base, what, ctx.report, skip=RESERVED_KEYS if kind == "plugin" else ())
    for parts, message, value in _schema_findings(_compiled(kind, name), go_view, base, ctx.report):
        since = rules.since.get(parts[len(base)]) if len(parts) > len(base) else None
        if since:
            ctx.since(since, parts[len(ctx.base):], message, *value)
        else:
            ctx.report.error(json_path(parts), message, *value)
    for key in go_view:
        where = base[len(ctx.base):] + [key]
        if key in rules.removed:
            ctx.warn(where, f"only plugin releases before v{rules.removed[key]} read this key; newer ones ignore it")
        elif key in rules.since and ctx.releases is not None and not ctx.releases.at_least(rules.since[key]):
            certainly = ctx.releases.before(rules.since[key])
            ctx.warn(where, f"the installed {name} plugin is {ctx.releases.label}, and releases before "
                     f"{release_name(rules.since[key])} ignore this key" + ("" if certainly else " (it may be one of them)"))
    return go_view


def _check_chaining(plugin_type: str, rules, ctx: Context, interface_owner) -> None:
    """Rules of the plugin's place in the list; ``interface_owner``: (type, path) of an earlier
    plugin that created the container interface this one would create again, or None."""
    if ctx.position == 0 and rules.chained:
        ctx.error(["type"], f"{plugin_type} is a chained plugin: it needs a previous plugin's result and cannot come first",
                  plugin_type)
    if rules.min_spec and version_or_none(ctx.version or "0.1.0") and not ctx.version_at_least(rules.min_spec):
        ctx.report.error("cniVersion", f"plugin {plugin_type} ({ctx.path()}) needs cniVersion {rules.min_spec} or newer",
                         ctx.version)
    if interface_owner:
        owner_type, owner_path = interface_owner
        ctx.error(["type"], f"creates the container interface, which {owner_type} ({owner_path}) already created: "
                  "the ADD fails with 'already exists'", plugin_type)


def _check_ipam(plugin: dict, plugin_type: str, ipam_type: str, ctx: Context) -> dict:
    """The IPAM section; under a third-party plugin, which may rewrite the section before it
    delegates (Calico's usePodCidr), the findings are warnings."""
    ipam = plugin["ipam"]
    rules = IPAM.get(ipam_type)
    if rules is None:
        ctx.warn(["ipam", "type"], "is not a reference IPAM plugin: its keys were not checked", ipam_type)
        return ipam
    if plugin_type in PLUGINS:
        return _apply_ipam(plugin, ipam_type, rules, ctx)
    scratch = ValidationReport()
    scratch_ctx = Context(scratch, ctx.base, ctx.version, ctx.position, seen=ctx.seen, releases=ctx.releases,
                          on_host=ctx.on_host)
    go_view = _apply_ipam(plugin, ipam_type, rules, scratch_ctx)
    for finding in scratch.errors + scratch.warnings:
        ctx.report.warn(finding.path, f"{finding.message} (as {ipam_type} would read it; {plugin_type} may rewrite its "
                        "ipam section before delegating)", *(() if finding.value is _NO_VALUE else (finding.value,)))
    return go_view


def _apply_ipam(plugin: dict, ipam_type: str, rules, ctx: Context) -> dict:
    go_view = _check_rules(plugin["ipam"], rules, "ipam", ipam_type, ctx)
    if rules.check:
        rules.check(dict(plugin, ipam=go_view), ctx)
    return go_view


def _check_dns(conf: dict, report: ValidationReport) -> None:
    for index, plugin, _type, _ipam in _plugin_types(conf):
        for where in (["dns"], ["ipam", "dns"]):
            holder = map_of(plugin.get("ipam")) if len(where) == 2 else plugin
            for position, server in enumerate(list_of(map_of(holder.get("dns")).get("nameservers"))):
                if isinstance(server, str) and not is_ip(server):
                    report.warn(json_path(["plugins", index] + where + ["nameservers", position]),
                                "is not an IP address; the plugin passes it on, but resolv.conf needs addresses", server)


# --- versions against the installed binaries -----------------------------------------------------

def _check_installed(conf: dict, installed_versions, installed_release, report: ValidationReport) -> tuple:
    """Resolve every plugin and IPAM type; return the version the list would run at and the
    releases each installed binary may be."""
    supported = []
    owners = []
    releases = {}
    for index, _plugin, plugin_type, ipam_type in _plugin_types(conf):
        for path, name in ((f"plugins[{index}].type", plugin_type), (f"plugins[{index}].ipam.type", ipam_type)):
            if not name:
                continue
            try:
                versions = list(installed_versions(name))
                release = installed_release(name) if installed_release else None
            except (CNIError, OSError, ValueError) as exc:
                report.error(path, str(exc), name)
                continue
            supported.append(versions)
            owners.append((path, name, versions))
            releases[name] = (Releases.exactly(release) if isinstance(release, str) else None) \
                or Releases.from_spec_versions(versions)
    version = _list_version(conf, supported)
    if version and version_or_none(version) is not None:
        for path, name, versions in owners:
            if (version or "0.1.0") not in versions:
                report.error("cniVersion", f"the installed {name} plugin ({path}) does not support it; it supports "
                             + ", ".join(versions) + _version_way_out(version, supported), version)
    return version, releases


def _version_way_out(version: str, supported: list) -> str:
    """The two ways out of a cniVersion the installed plugins do not all support."""
    common = set.intersection(*(set(v) for v in supported)) if supported else set()
    lower = sorted((v for v in common if version_key(v) < version_key(version)), key=version_key)
    older = f"set cni_version: {lower[-1]} (the highest every installed plugin supports), " if lower else ""
    return f"; {older}or install plugins that support {version}"


def _list_version(conf: dict, plugin_versions=None) -> str:
    version = conf.get("cniVersion", "")
    versions = conf.get("cniVersions")
    if not isinstance(version, str) or version_or_none(version or "0.1.0") is None:
        return ""
    if not isinstance(versions, list) or not all(isinstance(v, str) and version_or_none(v) for v in versions):
        versions = None
    return select_version(version, versions, plugin_versions)


# --- layer 3: across the host --------------------------------------------------------------------

def _check_host(conf: dict, own_subnets: list, source, other_networks, report: ValidationReport) -> None:
    name = conf.get("name")
    own_devices = host_devices(list_of(conf.get("plugins")))
    for other in other_networks:
        other_source = other.source or "(unnamed)"
        if source and other.source == source:
            continue
        if other.name == name:
            if source and libcni_order(other.source) < libcni_order(source):
                report.error("name", f"is already defined in {other_source}, which libcni reads first: "
                             "this file would be ignored", name)
            elif source:
                report.warn("name", f"is also defined in {other_source}; libcni reads this file first and "
                            "ignores that one", name)
            else:
                report.warn("name", f"is also defined in {other_source}", name)
            continue
        other_subnets = [s for p in other.plugins if isinstance(p, dict) for s in assigned_subnets(p)]
        for mine in own_subnets:
            for theirs in other_subnets:
                if mine.network.version == theirs.network.version and mine.network.overlaps(theirs.network):
                    report.error(mine.path, f"overlaps {theirs.network} of network '{other.name}' ({other_source})",
                                 str(mine.network))
        for (kind, device), theirs in host_devices(other.plugins).items():
            mine = own_devices.get((kind, device))
            if mine is not None and theirs and mine and mine != theirs:
                report.error("plugins", f"{kind} '{device}' is also used by network '{other.name}' ({other_source}) "
                             f"with other subnets ({', '.join(sorted(theirs))}); the {kind} cannot hold both gateways",
                             device)


# --- entry point ---------------------------------------------------------------------------------

def validate_network_list(conf, *, installed_versions=None, installed_release=None, other_networks=(),
                          source: str | None = None, report: ValidationReport | None = None,
                          dropin_files: list | None = None) -> ValidationReport:
    """Validate one network configuration list (a dict as parsed from JSON).

    ``installed_versions``: ``plugin_type -> supported versions``, raising PluginNotFoundError,
    or None to skip the checks against installed binaries; given, the checks also consult the
    host's /proc (they run where the plugins will). ``installed_release``: ``plugin_type ->
    release`` recorded for the binary (e.g. "1.6.2"), or None when unknown; without it a
    binary's release is inferred from the CNI versions it supports. ``other_networks``: the
    host's other networks (objects with ``name``, ``source``, ``plugins``, as
    ``_conflist.load_conf_dir`` returns them); ``source`` is the file this list is (or will
    be) read from. ``report`` lets a caller add to findings it already has (e.g. from
    ``parse_conflist_text``). ``dropin_files``: the ``<conf_dir>/<name>/*.conf`` files libcni
    would add to a list without ``plugins`` (None when not known)."""
    report = report if report is not None else ValidationReport()
    if not isinstance(conf, dict):
        report.error("", "the network configuration must be a JSON object", conf)
        return report
    if isinstance(conf.get("plugins"), list):
        conf = dict(conf, plugins=as_libcni_passes(conf["plugins"]))  # what each plugin receives
    _check_envelope(conf, source, dropin_files, report)
    releases = {}
    if installed_versions is not None:
        version, releases = _check_installed(conf, installed_versions, installed_release, report)
    else:
        version = _list_version(conf)
    subnets = _check_plugins(conf, version, releases, installed_versions is not None, report)
    _check_dns(conf, report)
    if other_networks:
        _check_host(conf, subnets, source, other_networks, report)
    return report


def validate_text(text: str | bytes, **kwargs) -> tuple:
    """Parse and validate conflist text: ``(data or None, report)``."""
    data, report = parse_conflist_text(text)
    if data is None:
        return None, report
    return data, validate_network_list(data, report=report, **kwargs)


# --- strings that spell numbers and booleans -----------------------------------------------------

# The spellings Ansible's argument spec converts to booleans (lower-cased).
_TRUE = ("y", "yes", "on", "1", "true", "t")
_FALSE = ("n", "no", "off", "0", "false", "f")
_INTEGER = re.compile(r"\A\s*[+-]?[0-9]+\s*\Z")


def coerce_scalars(conf):
    """``conf`` with every string that spells what the schema wants there (an integer, a number
    or a boolean, like "9000" or "true") converted, as Ansible's argument spec converts its
    options: ansible-core before 2.19 hands templated numbers over as strings. Any other value
    is left for validation to report; keys of plugins without a schema are left alone."""
    if not isinstance(conf, dict):
        return conf
    result = dict(conf)
    for key in FLAG_KEYS:
        if key in result:
            result[key] = _coerce(result[key], {"type": "boolean"})
    if isinstance(result.get("plugins"), list):
        result["plugins"] = [_coerce_plugin(p) for p in result["plugins"]]
    return result


def _coerce_plugin(plugin):
    if not isinstance(plugin, dict) or not isinstance(plugin.get("type"), str) or plugin["type"] not in PLUGINS:
        return plugin
    result = _coerce(plugin, PLUGINS[plugin["type"]].schema)
    ipam = result.get("ipam")
    if isinstance(ipam, dict) and isinstance(ipam.get("type"), str) and ipam["type"] in IPAM:
        result["ipam"] = _coerce(ipam, IPAM[ipam["type"]].schema)
    return result


def _coerce(value, schema: dict):
    if isinstance(value, str):
        return _coerce_string(value, schema.get("type"))
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        return {k: _coerce(v, properties.get(k, extra if isinstance(extra, dict) else {})) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(v, schema["items"]) for v in value]
    return value


def _coerce_string(value: str, wanted):
    if wanted == "integer" and _INTEGER.match(value):
        return int(value)
    if wanted == "number":
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and _INTEGER.match(value) else number
    if wanted == "boolean" and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    return value
