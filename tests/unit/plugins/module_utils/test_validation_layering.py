# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validator names no plugin: what a plugin type does is in its ``_plugin_rules/`` file,
reached through the registry, so adding a plugin's rules never touches the validator."""

from __future__ import annotations

import ast
import pathlib

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules.registry import IPAM, PLUGINS

MODULE_UTILS = pathlib.Path(__file__).parents[4] / "plugins" / "module_utils"
VALIDATOR = [MODULE_UTILS / "_validate.py"] + sorted((MODULE_UTILS / "_validation").glob("*.py"))
SHARED_RULES_MODULES = ("_plugin_rules.registry", "_plugin_rules._common")


def _tree(path: pathlib.Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@pytest.mark.parametrize("path", VALIDATOR, ids=lambda p: p.name)
def test_no_plugin_type_is_quoted(path):
    types = set(PLUGINS) | set(IPAM)
    quoted = [(node.lineno, node.value) for node in ast.walk(_tree(path))
              if isinstance(node, ast.Constant) and node.value in types]
    assert quoted == []


@pytest.mark.parametrize("path", VALIDATOR, ids=lambda p: p.name)
def test_plugin_rules_reached_through_the_registry(path):
    imported = [node.module for node in ast.walk(_tree(path))
                if isinstance(node, ast.ImportFrom) and node.module and "_plugin_rules" in node.module]
    assert [m for m in imported if not m.lstrip(".").endswith(SHARED_RULES_MODULES)] == []
