# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every YAML example of the documents in DOCUMENTS is a file of docs/examples/, byte for byte, and the
molecule scenario ``docs`` runs every one of those files: so each example a reader sees has run."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The documents whose YAML blocks must all be runnable examples.
DOCUMENTS = tuple(ROOT / name for name in (
    "README.md", "docs/user-guide.md", "docs/namespaces-gc-info.md", "docs/plugin-install.md", "docs/validation.md"))
EXAMPLES = ROOT / "docs" / "examples"
DOCS_CONVERGE = ROOT / "molecule" / "docs" / "converge.yml"

# A fenced block: its info string and its body (up to the closing fence at line start).
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _yaml_blocks() -> list:
    return [body for document in DOCUMENTS for info, body in FENCE.findall(document.read_text())
            if info.strip() in ("yaml", "yml")]


def _example_files() -> dict:
    return {path.name: path.read_text() for path in sorted(EXAMPLES.glob("*.yml"))}


def _imported_by_docs_scenario() -> list:
    plays = yaml.safe_load(DOCS_CONVERGE.read_text())
    return [pathlib.PurePosixPath(play["ansible.builtin.import_playbook"]).name
            for play in plays if "ansible.builtin.import_playbook" in play]


def test_the_guide_has_yaml_examples():
    assert len(_yaml_blocks()) >= 5


@pytest.mark.parametrize("block", _yaml_blocks(), ids=lambda block: block.splitlines()[1][:50])
def test_each_yaml_block_of_the_guide_is_an_example_file(block):
    files = _example_files()
    assert block in files.values(), "a YAML block of the documents differs from every file of docs/examples/"


def test_each_example_file_is_shown_in_the_guide():
    shown = _yaml_blocks()
    assert [name for name, text in _example_files().items() if text not in shown] == []


def test_the_docs_scenario_runs_each_example_file_once():
    assert sorted(_imported_by_docs_scenario()) == sorted(_example_files())


@pytest.mark.parametrize("name", sorted(_example_files()))
def test_each_example_is_a_playbook_using_only_the_docs_names(name):
    text = _example_files()[name]
    plays = yaml.safe_load(text)
    assert isinstance(plays, list) and all("hosts" in play for play in plays)
    # The examples run on the test machine: every namespace, link and directory is cnit-d-*, every
    # subnet within 10.254.0.0/16 (comments, which show other set-ups, aside).
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert set(re.findall(r"\b10\.(\d+)\.\d+\.\d+", code)) <= {"254"}
    assert re.findall(r"/tmp/(?!cnit-d-)[\w.-]+", code) == []
    assert re.findall(r"\b(?:bridge|master|netns|network): (?!cnit-d-)[\w-]+", code) == []
