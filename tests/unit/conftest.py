# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the unit tests (tests/conftest.py puts tests/utils on the import path)."""

from __future__ import annotations

import pytest
from fakeplugin import FakePlugins
import module_harness
from cachehost import Host


@pytest.fixture
def fake(tmp_path):
    """The test-double plugin, installed under any names into ``<tmp_path>/bin``."""
    return FakePlugins(tmp_path / "bin")


@pytest.fixture
def run_module(capsys):
    """``run_module(module, **args)``: a module's main() with ``args`` as Ansible passes them
    (add ``_ansible_check_mode``/``_ansible_diff`` for those modes); returns its JSON result."""
    def run(module, **args) -> dict:
        return module_harness.run_module(module, capsys, **args)
    return run


@pytest.fixture
def parse_arguments(capsys):
    """``parse_arguments(module, **args)``: ``(params, None)`` when the module's argument spec
    accepts ``args``, ``(None, failure result)`` when it does not; the module's logic never runs."""
    def parse(module, **args) -> tuple:
        return module_harness.parse_arguments(module, capsys, **args)
    return parse


@pytest.fixture
def host(tmp_path):
    """A plugin dir with the test double, a conf dir and a cache dir of hand-written entries."""
    return Host(tmp_path)
