# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every YAML block of docs/fleet.md is a file of molecule/fleet/, and every one of
docs/routed-network.md a file of molecule/cluster/, byte for byte, and the scenarios run the
playbooks among them: so the inventories and playbooks a reader sees have run."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
# A fenced block: its info string and its body (up to the closing fence at line start).
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# Each document, its scenario, and the files of the scenario a reader must see in it.
DOCUMENTS = {
    "fleet.md": ("fleet", ("inventory/hosts.yml", "inventory/group_vars/all.yml", "inventory/group_vars/fleet.yml",
                           "inventory/group_vars/fleet_become.yml", "site.yml", "tasks/attach.yml", "rolling.yml")),
    "routed-network.md": ("cluster", ("inventory/hosts.yml", "inventory/group_vars/all.yml", "site.yml")),
}
SHOWN = [(document, name) for document, (_scenario, names) in DOCUMENTS.items() for name in names]
FLEET = ROOT / "molecule" / "fleet"


def _yaml_blocks(document: str) -> list:
    text = (ROOT / "docs" / document).read_text()
    return [body for info, body in FENCE.findall(text) if info.strip() in ("yaml", "yml")]


def _scenario_files(document: str) -> dict:
    scenario = ROOT / "molecule" / DOCUMENTS[document][0]
    return {str(path.relative_to(scenario)): path.read_text() for path in sorted(scenario.rglob("*.yml"))}


def _imported_playbooks(scenario: pathlib.Path, playbook: str) -> list:
    return [play["ansible.builtin.import_playbook"] for play in yaml.safe_load((scenario / playbook).read_text())
            if "ansible.builtin.import_playbook" in play]


@pytest.mark.parametrize("document, block", [(document, block) for document in DOCUMENTS for block in _yaml_blocks(document)],
                         ids=lambda value: value.splitlines()[1][:50] if "\n" in value else value)
def test_each_yaml_block_is_a_file_of_the_scenario(document, block):
    assert block in _scenario_files(document).values(), f"a YAML block of docs/{document} differs from every file of its scenario"


@pytest.mark.parametrize("document, name", SHOWN)
def test_the_inventory_and_playbooks_are_shown(document, name):
    assert _scenario_files(document)[name] in _yaml_blocks(document)


def test_the_scenarios_run_the_shown_playbooks():
    assert _imported_playbooks(FLEET, "converge.yml") == ["site.yml"]
    assert _imported_playbooks(FLEET, "verify.yml") == ["rolling.yml"]
    for playbook in ("site.yml", "rolling.yml"):
        assert "ansible.builtin.import_tasks: tasks/attach.yml" in (FLEET / playbook).read_text()
    assert _imported_playbooks(ROOT / "molecule" / "cluster", "converge.yml") == ["site.yml"]


def test_each_host_of_the_fleet_has_host_vars():
    hosts = yaml.safe_load((FLEET / "inventory" / "hosts.yml").read_text())
    names = {host for group in hosts["fleet"]["children"].values() for host in group["hosts"]}
    assert {path.stem for path in (FLEET / "inventory" / "host_vars").glob("*.yml")} == names
