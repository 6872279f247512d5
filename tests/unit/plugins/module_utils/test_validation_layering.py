# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""No module_utils file outside ``_plugin_rules/`` names a plugin: what a plugin type does is in
its ``_plugin_rules/`` file, reached through the registry, so adding a plugin's rules never
touches the validator, the engine or a service."""

from __future__ import annotations

import ast
import pathlib

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules.registry import IPAM, PLUGINS

MODULE_UTILS = pathlib.Path(__file__).parents[4] / "plugins" / "module_utils"
OUTSIDE_THE_RULES = sorted(path for path in MODULE_UTILS.rglob("*.py") if "_plugin_rules" not in path.parts)
# names: the plugins' names alone (held to the registry's), for what needs no rules.
SHARED_RULES_MODULES = ("_plugin_rules.registry", "_plugin_rules._common", "_plugin_rules.names")
# Strings equal to a plugin type that mean something else where they stand, and what.
NOT_PLUGIN_NAMES = {
    ("_exec.py", "dummy"): "the placeholder libcni's VERSION probe puts in CNI_NETNS, CNI_IFNAME and CNI_PATH",
    ("_routes.py", "static"): "the name of route protocol 4",
    ("_routes.py", "dhcp"): "the name of route protocol 16",
    ("_schemas.py", "bandwidth"): "a capability name of the CNI conventions",
    ("_vxlan.py", "bridge"): "iproute2's bridge command, which edits a VXLAN device's FDB",
}


def _tree(path: pathlib.Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _name(path: pathlib.Path) -> str:
    return str(path.relative_to(MODULE_UTILS))


@pytest.mark.parametrize("path", OUTSIDE_THE_RULES, ids=_name)
def test_no_plugin_type_is_quoted(path):
    types = set(PLUGINS) | set(IPAM)
    quoted = [(node.lineno, node.value) for node in ast.walk(_tree(path))
              if isinstance(node, ast.Constant) and node.value in types
              and (_name(path), node.value) not in NOT_PLUGIN_NAMES]
    assert quoted == []


@pytest.mark.parametrize("path", OUTSIDE_THE_RULES, ids=_name)
def test_plugin_rules_reached_through_the_registry(path):
    imported = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and "_plugin_rules" in node.module:
            imported += [f"{node.module}.{alias.name}" if node.module.endswith("_plugin_rules") else node.module
                         for alias in node.names]
    assert [m for m in imported if not m.lstrip(".").endswith(SHARED_RULES_MODULES)] == []


def test_every_exception_is_still_there():
    """An entry of NOT_PLUGIN_NAMES whose string is gone would let a plugin's name in unseen."""
    present = {(_name(path), node.value) for path in OUTSIDE_THE_RULES for node in ast.walk(_tree(path))
               if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert set(NOT_PLUGIN_NAMES) <= present
