# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What was added after 1.0.0 says since when: a module or role that 1.0.0 lacked carries
``version_added`` itself, and so does every option (suboptions too) of an older module or role
that 1.0.0 did not document. 1.0.0's option sets are a committed snapshot
(fixtures/options-1.0.0.json, made by tests/utils/documented_options.py from the release's tree):
the tests run on clones without the release's tag."""

from __future__ import annotations

import json
from pathlib import Path

import documented_options
import pytest
from ansible.module_utils.compat.version import LooseVersion

ROOT = Path(__file__).resolve().parents[2]
RELEASED = json.loads((Path(__file__).parent / "fixtures" / "options-1.0.0.json").read_text(encoding="utf-8"))
FIRST_RELEASE_CHECKED = "1.0.0"

MODULES = documented_options.modules(ROOT)
ROLES = documented_options.roles(ROOT)
PLUGINS = [("modules", name, doc) for name, doc in MODULES.items()] + [("roles", name, spec) for name, spec in ROLES.items()]


def _added_after_1_0_0(version_added) -> bool:
    return version_added is not None and LooseVersion(str(version_added)) > LooseVersion(FIRST_RELEASE_CHECKED)


def _lacking_version_added(kind: str, name: str, doc: dict) -> list:
    """The options of ``doc`` that 1.0.0 did not document and that say nothing of when they were
    added (an option under one that says it inherits its parent's)."""
    released = set(RELEASED[kind][name])
    paths = documented_options.option_paths(doc.get("options"))
    lacking = []
    for path, spec in sorted(paths.items()):
        ancestors = [path.rsplit(".", depth)[0] for depth in range(1, path.count(".") + 1)]
        if path in released or any(ancestor not in released for ancestor in ancestors):
            continue
        if not _added_after_1_0_0(spec.get("version_added")):
            lacking.append(path)
    return lacking


@pytest.mark.parametrize("kind, name, doc", PLUGINS, ids=[f"{kind}/{name}" for kind, name, _doc in PLUGINS])
def test_what_1_0_0_lacked_says_since_when(kind, name, doc):
    if name not in RELEASED[kind]:
        assert _added_after_1_0_0(doc.get("version_added")), f"{kind} {name} is new since 1.0.0: give it version_added"
    else:
        assert _lacking_version_added(kind, name, doc) == [], f"options of {kind} {name} new since 1.0.0 lack version_added"


def test_the_reader_finds_every_module_and_role_1_0_0_had():
    """A reader that found nothing would pass every test above; the snapshot has the reader's shape."""
    current = documented_options.option_sets(ROOT)
    assert set(current) == set(RELEASED) == {"modules", "roles"}
    assert set(RELEASED["modules"]) <= set(current["modules"]) and set(RELEASED["roles"]) <= set(current["roles"])


def test_an_option_new_since_1_0_0_without_version_added_is_caught():
    doc = {"options": {**{path: {} for path in RELEASED["modules"]["cni_plugin_install"] if "." not in path},
                       "shiny": {"description": "new"}}}
    assert _lacking_version_added("modules", "cni_plugin_install", doc) == ["shiny"]
    doc["options"]["shiny"]["version_added"] = "1.1.0"
    assert _lacking_version_added("modules", "cni_plugin_install", doc) == []
