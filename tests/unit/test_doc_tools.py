# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The documentation tools of scripts/: what gen_docs.py takes from ansible-doc's stderr as
harmless, and how docsite.py sorts Sphinx's warnings and places the guides' links."""

from __future__ import annotations

import importlib
import pathlib
import sys

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def scripts():
    sys.path.insert(0, str(SCRIPTS))
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(str(SCRIPTS))


def test_gen_docs_tolerates_ansible_core_warnings_about_other_collections_only(scripts):
    pytest.importorskip("antsibull_docs_parser")
    gen_docs = scripts("gen_docs")
    stderr = ("[WARNING]: Collection at '/venv/ansible/_internal/ansible_collections/ansible/_protomatter' does not\n"
              "  have a MANIFEST.json file, nor has it galaxy.yml: cannot detect version.\n"
              "[DEPRECATION WARNING]: something of ansible-core. This feature will be removed in 2.23.\n"
              "[WARNING]: module cnikit.cni.cni_gc has a broken RETURN\n"
              "[ERROR]: cnikit.cni.cni_attach: no documentation\n")
    warnings, problems = gen_docs.split_stderr(stderr)
    assert [w.split(":")[0] for w in warnings] == ["[WARNING]", "[DEPRECATION WARNING]"]
    assert "cannot detect version" in warnings[0]
    assert problems == ["[WARNING]: module cnikit.cni.cni_gc has a broken RETURN",
                        "[ERROR]: cnikit.cni.cni_attach: no documentation"]


UNREACHABLE = ("WARNING: failed to reach any of the inventories with the following issues:\n"
               "intersphinx inventory 'https://docs.ansible.com/objects.inv' not fetchable due to ConnectionError\n")
FOREIGN_LABEL = "/site/rst/cni_gc_module.rst:650: WARNING: undefined label: 'common_return_values' [ref.ref]"
OWN_LABEL = ("/site/rst/fleet.rst:3: WARNING: undefined label: 'ansible_collections.cnikit.cni.docsite.nope'"
             " [ref.ref]")
BROKEN_LINK = "/site/rst/fleet.md:338: WARNING: 'myst' cross-reference target not found: 'missing.md' [myst.xref_missing]"


def test_docsite_reports_unreachable_inventories_and_fails_on_the_collections_own_warnings(scripts):
    docsite = scripts("docsite")
    found = docsite.split_warnings("\n".join([UNREACHABLE, FOREIGN_LABEL, OWN_LABEL, BROKEN_LINK]))
    assert len(found) == 4 and "not fetchable" in found[0]
    unreachable, own = docsite.sort_warnings(found)
    assert unreachable == [found[0], FOREIGN_LABEL]
    assert own == [OWN_LABEL, BROKEN_LINK]


def test_docsite_blames_the_collection_for_foreign_labels_while_every_inventory_is_reachable(scripts):
    unreachable, own = scripts("docsite").sort_warnings([FOREIGN_LABEL])
    assert (unreachable, own) == ([], [FOREIGN_LABEL])


@pytest.mark.parametrize("target, expected", [
    ("engine.md#sharing", "engine.md#sharing"),
    ("https://www.cni.dev/", "https://www.cni.dev/"),
    ("#top", "#top"),
    ("reference/README.md", "../index.rst"),
    ("reference/cni_gc_module.md#return-collected", "../cni_gc_module.rst"),
    ("../README.md#support-matrix", "https://github.com/cnikit/cni/blob/main/README.md#support-matrix"),
    ("examples/", "https://github.com/cnikit/cni/tree/main/docs/examples"),
])
def test_docsite_links_of_a_guide(scripts, tmp_path, target, expected):
    docs = tmp_path / "docs"
    (docs / "examples").mkdir(parents=True)
    guide = docs / "fleet.md"
    assert scripts("docsite").rewrite_link(target, guide, docs, "https://github.com/cnikit/cni") == expected
