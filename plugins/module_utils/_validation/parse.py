# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Conflist text read as Go reads it: JSON with Go's limits, and the keys it would settle
silently when they are repeated."""

from __future__ import annotations

import json

from .._conflist import TOO_DEEP, go_json_problem, is_single_conf
from .._plugin_rules.registry import PLUGINS
from .._plugin_rules._common import json_path
from .report import ValidationReport


def parse_conflist_text(text: str | bytes) -> tuple:
    """Parse JSON text as Go would read it, returning ``(data, report)``.

    Duplicate keys are reported: Go keeps the last one silently, and some plugins refuse them
    in one of their maps (``PluginRules.duplicate_key_errors``). Those of a single-plugin network
    (a ``.conf``) name their paths in the one-plugin list libcni makes of it (``plugins[0].sysctl``),
    so that its plugin's rules judge them too. A document that is not JSON is an error at the root."""
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
        _report_duplicates(data, ["plugins", 0] if is_single_conf(data) else [], duplicates, report)
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
