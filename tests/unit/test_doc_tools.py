# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The documentation tools of scripts/: what gen_docs.py takes from ansible-doc's stderr as
harmless, how docsite.py sorts the site build's warnings, and how guides_rst.py writes the guides
as the site's RST pages (and that the committed ones are what it writes)."""

from __future__ import annotations

import argparse
import importlib
import pathlib
import re
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


def test_gen_docs_links_the_markdown_guide_where_the_site_links_its_page(scripts):
    pytest.importorskip("antsibull_docs_parser")
    gen_docs = scripts("gen_docs")
    page = gen_docs.Renderer("cnikit.cni.cni_network", "module",
                             titles={"validation": "Conflist `validation`", "fleet": "Fleet"})
    assert page.markup("See R(the checks, ansible_collections.cnikit.cni.docsite.validation), "
                       "R(become, ansible_collections.cnikit.cni.docsite.fleet.become) and "
                       "R(return values, common_return_values).") == (
        "See [the checks](../validation.md)\\, [become](../fleet.md#become) and return values\\.")
    assert page.seealso([{"ref": "ansible_collections.cnikit.cni.docsite.validation", "description": "Checks."},
                         {"ref": "playbooks_intro", "description": "Plays."}]) == [
        "- [Conflist `validation`](../validation.md) — Checks\\.", "- playbooks\\_intro — Plays\\."]
    with pytest.raises(SystemExit, match="no guide docs/gone.md"):
        page.seealso([{"ref": "ansible_collections.cnikit.cni.docsite.gone", "description": "Gone."}])


UNREACHABLE = ("WARNING: failed to reach any of the inventories with the following issues:\n"
               "intersphinx inventory 'https://docs.ansible.com/objects.inv' not fetchable due to ConnectionError\n")
FOREIGN_LABEL = "/site/rst/collections/cnikit/cni/cni_gc_module.rst:650: WARNING: undefined label: 'common_return_values' [ref.ref]"
OWN_LABEL = ("/site/rst/collections/cnikit/cni/docsite/fleet.rst:3: WARNING: undefined label:"
             " 'ansible_collections.cnikit.cni.docsite.nope' [ref.ref]")
OWN_PAGE = ("/site/rst/collections/cnikit/cni/docsite/routes.rst:40: ERROR: Unknown interpreted text role"
            " \"refs\". [docutils]")
EVERY_SITES_PAGE = "/site/rst/index.rst:12: WARNING: duplicate label: 'ansible_index' [docutils]"


def test_docsite_reports_unreachable_inventories_and_fails_on_the_collections_own_warnings(scripts):
    docsite = scripts("docsite")
    found = docsite.split_warnings("\n".join([UNREACHABLE, FOREIGN_LABEL, OWN_LABEL, OWN_PAGE, EVERY_SITES_PAGE]))
    assert len(found) == 5 and "not fetchable" in found[0]
    network, own, others = docsite.sort_warnings(found)
    assert network == [found[0], FOREIGN_LABEL]
    assert own == [OWN_LABEL, OWN_PAGE]
    assert others == [EVERY_SITES_PAGE]


def test_docsite_blames_the_collection_for_foreign_labels_while_every_inventory_is_reachable(scripts):
    network, own, others = scripts("docsite").sort_warnings([FOREIGN_LABEL])
    assert (network, own, others) == ([], [FOREIGN_LABEL], [])


@pytest.mark.parametrize("log, status, expected", [
    (UNREACHABLE + FOREIGN_LABEL, 1, 0),
    (UNREACHABLE + OWN_LABEL, 1, 1),
    ("antsibull-docs: cannot load the collection\n", 2, 1),
    ("", 0, 0),
])
def test_docsite_fails_on_own_warnings_and_on_a_build_that_failed_without_warnings(scripts, tmp_path, log, status,
                                                                                   expected):
    stderr = tmp_path / "warnings.log"
    stderr.write_text(log, encoding="utf-8")
    docsite = scripts("docsite")
    assert docsite.warnings(argparse.Namespace(log=stderr, status=status)) == expected


REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def test_the_guides_rst_pages_are_what_the_markdown_guides_give(scripts):
    """docs/docsite/rst/ is committed: regenerating it must give the same bytes (run
    python scripts/guides_rst.py after changing a guide)."""
    pytest.importorskip("pypandoc")
    guides_rst = scripts("guides_rst")
    assert guides_rst.differences(REPOSITORY, guides_rst.render(REPOSITORY)) == []


GUIDE = """# {title}

Intro, see [{other}.md]({other}.md), [the part](#part-two), [{other}.md]({other}.md#deep),
[`examples/`](examples/), [README](../README.md#requirements), [reference](reference/README.md),
[reference/cni_gc_module.md](reference/cni_gc_module.md) and [CNI](https://www.cni.dev/).

## Part two

### Deep
"""


def a_collection(root: pathlib.Path, guides: dict[str, str]) -> pathlib.Path:
    (root / "docs" / "examples").mkdir(parents=True)
    (root / "galaxy.yml").write_text("repository: https://github.com/cnikit/cni\n", encoding="utf-8")
    (root / "docs" / "docsite").mkdir()
    toctree = "".join(f"      - {name}\n" for name in guides)
    (root / "docs" / "docsite" / "extra-docs.yml").write_text(
        f"sections:\n  - title: Guides\n    toctree:\n{toctree}", encoding="utf-8")
    for name, text in guides.items():
        (root / "docs" / f"{name}.md").write_text(text, encoding="utf-8")
    return root


def test_guides_rst_places_each_link_on_the_site_or_in_the_repository(scripts, tmp_path):
    pytest.importorskip("pypandoc")
    root = a_collection(tmp_path, {"first": GUIDE.format(title="First", other="second"),
                                   "second": GUIDE.format(title="Second", other="first")})
    page = scripts("guides_rst").render(root)["first.rst"]
    assert page.index(".. _ansible_collections.cnikit.cni.docsite.first:\n\nFirst\n=====\n") > 0
    # Another guide: its title (Sphinx's, for a :ref: without text) instead of its file name.
    assert ":ref:`ansible_collections.cnikit.cni.docsite.second`" in page
    assert ":ref:`ansible_collections.cnikit.cni.docsite.second.deep`" in page
    assert ":ref:`the part <ansible_collections.cnikit.cni.docsite.first.part-two>`" in page
    # Headings that links target are labelled; the others are not.
    assert ".. _ansible_collections.cnikit.cni.docsite.first.part-two:\n\nPart two\n" in page
    assert ".. _ansible_collections.cnikit.cni.docsite.first.deep:" in page  # second.md links it
    assert ":ref:`reference <plugins_in_cnikit.cni>`" in page
    assert ":ref:`cnikit.cni.cni_gc <ansible_collections.cnikit.cni.cni_gc_module>`" in page
    assert "`examples/ <https://github.com/cnikit/cni/tree/main/docs/examples>`__" in page
    assert "`README <https://github.com/cnikit/cni/blob/main/README.md#requirements>`__" in page
    assert "`CNI <https://www.cni.dev/>`__" in page


@pytest.mark.parametrize("second, message", [
    ("# Second\n\nSee [gone](first.md#nowhere).\n", "docs/first.md has no heading with anchor #nowhere"),
    ("# Second\n\nSee [gone](third.md).\n", "third.md, which is no guide of the site"),
    ("No title.\n", "docs/second.md does not start with its title"),
])
def test_guides_rst_refuses_a_link_to_nowhere_and_a_guide_without_title(scripts, tmp_path, second, message):
    pytest.importorskip("pypandoc")
    guides_rst = scripts("guides_rst")
    root = a_collection(tmp_path, {"first": "# First\n", "second": second})
    with pytest.raises(guides_rst.GuideError, match=re.escape(message)):
        guides_rst.render(root)


def test_guides_rst_wants_every_guide_listed(scripts, tmp_path):
    guides_rst = scripts("guides_rst")
    root = a_collection(tmp_path, {"first": "# First\n"})
    (root / "docs" / "stray.md").write_text("# Stray\n", encoding="utf-8")
    with pytest.raises(guides_rst.GuideError, match="docs/stray.md is not listed"):
        guides_rst.listed_guides(root)


def test_guides_rst_check_names_a_stale_a_missing_and_an_unlisted_page(scripts, tmp_path):
    guides_rst = scripts("guides_rst")
    rst = tmp_path / "docs" / "docsite" / "rst"
    rst.mkdir(parents=True)
    (rst / "first.rst").write_text("old\n", encoding="utf-8")
    (rst / "gone.rst").write_text("old\n", encoding="utf-8")
    found = guides_rst.differences(tmp_path, {"first.rst": "new\n", "second.rst": "new\n"})
    assert found == ["docs/docsite/rst/gone.rst is no page of a listed guide",
                     "docs/docsite/rst/first.rst is not what docs/first.md gives",
                     "docs/docsite/rst/second.rst is missing"]
