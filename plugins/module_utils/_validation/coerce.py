# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Strings that spell numbers and booleans, converted where a plugin's schema wants them."""

from __future__ import annotations

import re

from .._conflist import FLAG_KEYS
from .._plugin_rules.registry import IPAM, PLUGINS


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
