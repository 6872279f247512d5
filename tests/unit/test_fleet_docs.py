# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every YAML block of docs/fleet.md is a file of molecule/fleet/, byte for byte, and the fleet
scenario runs the playbooks among them: so the inventory and playbooks a reader sees have run."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "fleet.md"
SCENARIO = ROOT / "molecule" / "fleet"
# A fenced block: its info string and its body (up to the closing fence at line start).
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# The files a reader must see: the inventory's groups and the playbooks.
SHOWN = ("inventory/hosts.yml", "inventory/group_vars/all.yml", "inventory/group_vars/fleet.yml",
         "inventory/group_vars/fleet_become.yml", "site.yml", "tasks/attach.yml", "rolling.yml")


def _yaml_blocks() -> list:
    return [body for info, body in FENCE.findall(DOCUMENT.read_text()) if info.strip() in ("yaml", "yml")]


def _scenario_files() -> dict:
    return {str(path.relative_to(SCENARIO)): path.read_text() for path in sorted(SCENARIO.rglob("*.yml"))}


def _imported_playbooks(playbook: str) -> list:
    return [play["ansible.builtin.import_playbook"] for play in yaml.safe_load((SCENARIO / playbook).read_text())
            if "ansible.builtin.import_playbook" in play]


@pytest.mark.parametrize("block", _yaml_blocks(), ids=lambda block: block.splitlines()[1][:50])
def test_each_yaml_block_is_a_file_of_the_scenario(block):
    assert block in _scenario_files().values(), "a YAML block of docs/fleet.md differs from every file of molecule/fleet/"


@pytest.mark.parametrize("name", SHOWN)
def test_the_inventory_and_playbooks_are_shown(name):
    assert _scenario_files()[name] in _yaml_blocks()


def test_the_scenario_runs_the_shown_playbooks():
    assert _imported_playbooks("converge.yml") == ["site.yml"]
    assert _imported_playbooks("verify.yml") == ["rolling.yml"]
    for playbook in ("site.yml", "rolling.yml"):
        assert "ansible.builtin.import_tasks: tasks/attach.yml" in (SCENARIO / playbook).read_text()


def test_each_host_of_the_inventory_has_host_vars():
    hosts = yaml.safe_load((SCENARIO / "inventory" / "hosts.yml").read_text())
    names = {host for group in hosts["fleet"]["children"].values() for host in group["hosts"]}
    assert {path.stem for path in (SCENARIO / "inventory" / "host_vars").glob("*.yml")} == names
