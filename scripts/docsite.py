# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Put the Markdown guides of docs/ into the docs site antsibull-docs builds, and sort the
warnings of its Sphinx build.

antsibull-docs takes extra docs in RST only; the guides stay Markdown (GitHub renders them, the
repository links them) and Sphinx renders them with MyST. In a copy of the collection:

- ``stage`` writes, for each guide that docs/docsite/extra-docs.yml lists, an RST page with the
  guide's label and title into docs/docsite/rst/, so that antsibull-docs lints its place (label,
  toctree) and copies it into the site as an extra doc, and the guide itself beside it. Links
  into the generated reference (docs/reference/) become links to the site's own module and role
  pages, and links out of docs/ links to the repository. Every guide of docs/*.md must be listed.
- ``site``, after antsibull-docs, turns each such page of the site's sources into one that
  includes the guide, copies the guides beside them (antsibull-docs copies RST only) and enables
  MyST in the site's conf.py. antsibull-docs' linter parses RST without Sphinx, so it cannot
  read the guides; Sphinx checks them (a broken link or anchor is a warning, and fails).
- ``warnings`` sorts Sphinx's warning log: a warning that only says a network inventory
  (intersphinx: docs.ansible.com, docs.python.org) could not be reached, or names a label only
  such an inventory holds, is reported as such; every other warning is the collection's and
  fails the build.

Run by the docs stage of scripts/test.sh."""

from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import sys

import yaml

NAMESPACE, NAME = "cnikit", "cni"
OWN_LABELS = f"ansible_collections.{NAMESPACE}.{NAME}."
EXTRA_DOCS = "docs/docsite/extra-docs.yml"
RST_DIR = "docs/docsite/rst"
# An extra doc as antsibull-docs' linter sees it: the label it requires, and the guide's title.
PLACE_PAGE = """.. _{label}:

{title}
{underline}

The guide docs/{guide}, rendered by MyST.
"""
# The same page on the site: the label, and the guide rendered by MyST.
INCLUDE_PAGE = """.. _{label}:

.. include:: {guide}
   :parser: myst_parser.sphinx_
"""
TITLE = re.compile(r"^# (.+)$", re.MULTILINE)
MYST_CONF = f"""
# Added by scripts/docsite.py: the guides of docs/ are Markdown, rendered by MyST where an RST
# page includes them (so they are no pages of their own), with GitHub-style heading anchors so
# that links such as engine.md#sharing-the-cache-with-other-runtimes resolve.
extensions.append('myst_parser')
myst_heading_anchors = 4
exclude_patterns = ['collections/{NAMESPACE}/{NAME}/docsite/*.md']
"""
# A Markdown inline link's target: [text](target) or [text](target "title").
LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
# Sphinx's message when no copy of an intersphinx inventory could be read (the issues follow it).
UNREACHABLE_INVENTORY = "failed to reach any of the inventories"
# A reference to a label Sphinx does not know: found in an inventory when that is reachable.
UNDEFINED_LABEL = re.compile(r"undefined label: '([^']*)'")


def rewrite_link(target: str, source: pathlib.Path, docs: pathlib.Path, repository: str) -> str:
    """Where a link of ``source`` (a file directly under ``docs``) points to on the site."""
    if URL_SCHEME.match(target) or target.startswith("#"):
        return target
    path = target.split("#", 1)[0]
    anchor = target[len(path):]  # "#fragment", or ""
    resolved = (source.parent / path).resolve()
    try:
        inside = resolved.relative_to(docs)
    except ValueError:
        return f"{repository}/blob/main/{resolved.relative_to(docs.parent).as_posix()}{anchor}"
    if resolved.is_dir():
        return f"{repository}/tree/main/docs/{inside.as_posix()}"
    if inside.parts[:1] == ("reference",):
        # docs/reference/ is the generated reference: the site has its own pages of it.
        page = "index" if inside.name == "README.md" else inside.stem
        return f"../{page}.rst"
    return target


def guide_refs(collection: pathlib.Path) -> list[str]:
    """The guides extra-docs.yml lists; fails naming a listed guide that does not exist or a
    guide of docs/ that is not listed."""
    index = yaml.safe_load((collection / EXTRA_DOCS).read_text(encoding="utf-8"))
    refs = [entry["ref"] if isinstance(entry, dict) else entry
            for section in index["sections"] for entry in section["toctree"]]
    guides = {path.stem for path in (collection / "docs").glob("*.md")}
    problems = [f"{EXTRA_DOCS} lists {ref}, but there is no docs/{ref}.md" for ref in refs if ref not in guides]
    problems += [f"docs/{guide}.md is not listed in {EXTRA_DOCS}" for guide in sorted(guides - set(refs))]
    if problems:
        sys.exit("\n".join(problems))
    return refs


def stage(args: argparse.Namespace) -> int:
    collection = args.collection.resolve()
    docs, dest = collection / "docs", collection / RST_DIR
    dest.mkdir(parents=True, exist_ok=True)
    repository = args.repository.rstrip("/")
    refs = guide_refs(collection)
    for ref in refs:
        guide = docs / f"{ref}.md"
        text = LINK.sub(lambda m, g=guide: m.group(1) + rewrite_link(m.group(2), g, docs, repository) + m.group(3),
                        guide.read_text(encoding="utf-8"))
        (dest / guide.name).write_text(text, encoding="utf-8")
        title = TITLE.search(text)
        if title is None:
            sys.exit(f"docs/{guide.name} has no title (a first-level '# ' heading)")
        (dest / f"{ref}.rst").write_text(PLACE_PAGE.format(label=f"{OWN_LABELS}docsite.{ref}", guide=guide.name,
                                                           title=title.group(1), underline="=" * len(title.group(1))),
                                         encoding="utf-8")
    if (docs / "examples").is_dir():
        shutil.copytree(docs / "examples", dest / "examples", dirs_exist_ok=True)
    print(f"staged {len(refs)} guides in {dest}")
    return 0


def site(args: argparse.Namespace) -> int:
    staged = args.collection.resolve() / RST_DIR
    dest = args.site / "rst" / "collections" / NAMESPACE / NAME / "docsite"
    for guide in staged.glob("*.md"):
        shutil.copy2(guide, dest / guide.name)
        (dest / f"{guide.stem}.rst").write_text(
            INCLUDE_PAGE.format(label=f"{OWN_LABELS}docsite.{guide.stem}", guide=guide.name), encoding="utf-8")
    if (staged / "examples").is_dir():
        shutil.copytree(staged / "examples", dest / "examples", dirs_exist_ok=True)
    with open(args.site / "conf.py", "a", encoding="utf-8") as conf:
        conf.write(MYST_CONF)
    return 0


def split_warnings(log: str) -> list[str]:
    """The warnings of a ``sphinx-build -w`` log, each with its continuation lines."""
    found: list[str] = []
    for line in log.splitlines():
        if "WARNING:" in line or not found:
            found.append(line)
        elif line.strip():
            found[-1] += "\n" + line
    return found


def sort_warnings(found: list[str]) -> tuple[list[str], list[str]]:
    """(warnings about unreachable network inventories, the collection's own warnings).

    While an inventory is unreachable, a label outside this collection (the Ansible docs'
    ``common_return_values``, ``ansible_collections.ansible.builtin.file_module``, ...) cannot be
    resolved either: that is the inventory's warning too. A label of this collection never is."""
    unreachable = [w for w in found if UNREACHABLE_INVENTORY in w]
    if unreachable:
        for warning in found:
            label = UNDEFINED_LABEL.search(warning)
            if label and not label.group(1).startswith(OWN_LABELS):
                unreachable.append(warning)
    return unreachable, [w for w in found if w not in unreachable]


def warnings(args: argparse.Namespace) -> int:
    unreachable, own = sort_warnings(split_warnings(args.log.read_text(encoding="utf-8")))
    for warning in unreachable:
        print(f"network inventory not reachable: {warning}")
    for warning in own:
        print(f"the collection's docs: {warning}")
    print(f"{len(own)} warnings of the collection's docs; {len(unreachable)} about network inventories "
          "that could not be reached (their cross-references stay plain text)")
    return 1 if own else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    stage_command = commands.add_parser("stage", help="write the guides' pages into docs/docsite/rst/")
    stage_command.add_argument("--collection", type=pathlib.Path, required=True,
                               help="a copy of the collection, at .../ansible_collections/cnikit/cni")
    stage_command.add_argument("--repository", required=True, help="the repository URL of galaxy.yml")
    stage_command.set_defaults(run=stage)
    site_command = commands.add_parser("site", help="complete the site's sources after antsibull-docs")
    site_command.add_argument("--collection", type=pathlib.Path, required=True, help="the staged copy")
    site_command.add_argument("--site", type=pathlib.Path, required=True, help="the directory of sphinx-init")
    site_command.set_defaults(run=site)
    sort = commands.add_parser("warnings", help="sort the warning log of sphinx-build -w")
    sort.add_argument("log", type=pathlib.Path)
    sort.set_defaults(run=warnings)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
