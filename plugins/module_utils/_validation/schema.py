# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""A plugin or IPAM section against its type's JSON Schema (jsonschema imported lazily, the
schemas compiled once per process), with the keys Go would read differently or not at all, and
the keys the installed release does not read yet or any longer."""

from __future__ import annotations

import difflib
import functools
import json

from .._plugin_rules.registry import IPAM, PLUGINS
from .._plugin_rules._common import FORMAT_CHECKS, Context, json_path, release_name
from .._schemas import FORMATS, RESERVED_KEYS, RESERVED_PREFIX
from .report import ValidationReport


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
def compiled(kind: str, name: str):
    """The validator of a plugin or IPAM type's schema, built once per process."""
    cls, checker = _validator_class()
    rules = PLUGINS[name] if kind == "plugin" else IPAM[name]
    return cls(rules.schema, format_checker=checker)


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


def schema_findings(validator, instance: dict, base: list, report: ValidationReport) -> list:
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


def _lower_keys(properties: dict) -> dict:
    lowered = _LOWER_KEYS.get(id(properties))
    if lowered is None:
        lowered = {k.lower(): k for k in properties}
        _LOWER_KEYS[id(properties)] = lowered
    return lowered


def lint_keys(instance, schema: dict, parts: list, reader: str, report: ValidationReport, skip=()):
    """Warn about keys the plugin would read differently or not at all; return the instance as
    Go sees it (case variants renamed, nulls dropped), copying only when something changes."""
    if isinstance(instance, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return instance
        linted = [lint_keys(v, items, parts + [i], reader, report) for i, v in enumerate(instance)]
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
                            f"the {reader} reads this key as '{canonical}' (Go matches keys case-insensitively); "
                            f"write '{canonical}'")
                if canonical not in instance:
                    result = dict(result) if result is instance else result
                    result[canonical] = result.pop(key)
                continue
            close = difflib.get_close_matches(key, list(properties), n=1, cutoff=0.75)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            report.warn(json_path(parts + [key]), f"unknown key: the {reader} ignores it{hint}")
    for key, subschema in properties.items():
        if key not in result:
            continue
        value = result[key]
        if value is None:
            report.warn(json_path(parts + [key]), "is null, which leaves the plugin's default in place")
            result = dict(result) if result is instance else result
            del result[key]
            continue
        linted = lint_keys(value, subschema, parts + [key], reader, report)
        if linted is not value:
            result = dict(result) if result is instance else result
            result[key] = linted
    return result


def check_rules(instance: dict, rules, kind: str, name: str, ctx: Context) -> dict:
    """Lint the keys, apply the schema and report keys the installed release does not read;
    return the object as Go reads it."""
    reader = f"{name} {'plugin' if kind == 'plugin' else 'IPAM plugin'}"
    base = ctx.base + ([] if kind == "plugin" else ["ipam"])
    go_view = lint_keys(instance, rules.schema, base, reader, ctx.report, skip=RESERVED_KEYS if kind == "plugin" else ())
    for parts, message, value in schema_findings(compiled(kind, name), go_view, base, ctx.report):
        added_in = rules.added_in.get(parts[len(base)]) if len(parts) > len(base) else None
        if added_in:
            ctx.refused_from(added_in, parts[len(ctx.base):], message, *value)
        else:
            ctx.report.error(json_path(parts), message, *value)
    for key in go_view:
        where = base[len(ctx.base):] + [key]
        if key in rules.removed_in:
            ctx.warn(where, f"only plugin releases before v{rules.removed_in[key]} read this key; newer ones ignore it")
        elif key in rules.added_in and ctx.releases is not None and not ctx.releases.at_least(rules.added_in[key]):
            certainly = ctx.releases.before(rules.added_in[key])
            ctx.warn(where, f"the installed {name} plugin is {ctx.releases.label}, and releases before "
                     f"{release_name(rules.added_in[key])} ignore this key" + ("" if certainly else " (it may be one of them)"),
                     of_host=True)
    return go_view
