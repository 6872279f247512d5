# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validator against the real plugin binaries: every real-world file of the corpus and
every mutation, run through both (see harness.py for what is rewritten to keep the host safe).
Targets: no false error on the corpus; on the mutations, each disagreement is one that
expected.py accepts, with its reason. `python tests/differential/report.py` writes the figures
into docs/validation.md."""

from __future__ import annotations

import json
import os

import pytest

import expected
import harness
from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_network_list

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.isdir(harness.PLUGIN_DIR),
                                reason=f"needs root and the plugin binaries in {harness.PLUGIN_DIR}")
CORPUS = harness.corpus_cases()
MUTATIONS = harness.mutation_cases()


def _mutation(plugin: str, case_id: str, conf: dict):
    """The case, expected to fail while a known defect of the collection shows with this release."""
    releases, defect = expected.KNOWN_DEFECTS.get(f"{plugin}: {case_id}", ((), ""))
    marks = [pytest.mark.xfail(strict=True, reason=defect)] if harness.releases.PLUGIN_RELEASE in releases else []
    return pytest.param(plugin, case_id, conf, marks=marks, id=f"{plugin}: {case_id}")


@pytest.fixture(scope="module")
def missing():
    return harness.missing_kinds()


@pytest.mark.parametrize("plugin, case_id, conf", CORPUS, ids=[c[1] for c in CORPUS])
def test_corpus_has_no_false_error(plugin, case_id, conf, missing):
    outcome = harness.run_case(plugin, case_id, conf, missing)
    assert outcome.verdict != "false error", (outcome.errors, outcome.message)


@pytest.mark.parametrize("plugin, case_id, conf", CORPUS, ids=[c[1] for c in CORPUS])
def test_corpus_rules_alone_reject_only_broken_files(plugin, case_id, conf):
    """Without binaries (as on the controller), only the files broken as written are errors."""
    del plugin
    errors = validate_network_list(conf).errors
    assert bool(errors) == (case_id in expected.INVALID_CORPUS), [str(e) for e in errors]


@pytest.mark.parametrize("plugin, case_id, conf", [_mutation(*case) for case in MUTATIONS])
def test_mutation_agrees_or_is_accepted(plugin, case_id, conf, missing):
    outcome = harness.run_case(plugin, case_id, conf, missing)
    accepted = expected.ACCEPTED_DISAGREEMENTS.get(f"{plugin}: {case_id}")
    if outcome.verdict in ("agree", "environment"):
        assert accepted is None, f"listed as a disagreement but the verdict is {outcome.verdict}"
    else:
        assert accepted is not None and accepted[0] == outcome.verdict, (outcome.verdict, outcome.errors, outcome.message)


def test_every_corpus_file_names_its_source():
    sources = json.loads((harness.CORPUS / "SOURCES.json").read_text())
    files = sorted(p.name for p in harness.CORPUS.glob("*.conflist"))
    assert files == sorted(sources)
    for entry in sources.values():
        assert entry["project"] and entry["path"] and len(entry["commit"]) == 40


def test_mutation_ids_are_unique():
    ids = [f"{plugin}: {case_id}" for plugin, case_id, _conf in MUTATIONS]
    assert len(ids) == len(set(ids))
