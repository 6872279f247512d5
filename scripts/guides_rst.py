# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the guides of docs/*.md as reStructuredText pages of the docs site, in docs/docsite/rst/.

The guides stay Markdown for the repository's readers; docs.ansible.com and antsibull-docs take
extra docs in RST only, so each guide that docs/docsite/extra-docs.yml lists becomes
docs/docsite/rst/<guide>.rst, converted by pandoc (pypandoc-binary) through its document tree,
in which the links are placed for the site:

- a link to another guide, or to a heading of one, becomes a reference to that page or section
  of the site; where the link's text is a file name, the page's or section's title stands instead;
- a link into docs/reference/ (the generated reference) becomes a reference to the site's own
  module or role page, or to the collection's index;
- any other link out of the guides (examples, README, molecule/) points to the repository.

Each page starts with the label antsibull-docs requires (ansible_collections.cnikit.cni.docsite.
<guide>); a heading that a link targets gets a label of its own (<page label>.<GitHub anchor>).
The pages are committed; a unit test and the docs stage of scripts/test.sh check that they are
what this script writes (--check). Run it after changing a guide:

    python scripts/guides_rst.py
"""

from __future__ import annotations

import argparse
import json
import pathlib
import posixpath
import re
import subprocess
import sys

import yaml

NAMESPACE, NAME = "cnikit", "cni"
PAGE_LABEL = f"ansible_collections.{NAMESPACE}.{NAME}.docsite.{{guide}}"
INDEX_LABEL = f"plugins_in_{NAMESPACE}.{NAME}"
EXTRA_DOCS = "docs/docsite/extra-docs.yml"
RST_DIR = "docs/docsite/rst"
HEADER = """..
  Generated from docs/{guide}.md by scripts/guides_rst.py: edit the Markdown guide and run
  python scripts/guides_rst.py.

"""
OWN_LABEL_LINE = re.compile(rf"^(\.\. _ansible_collections\.{NAMESPACE}\.{NAME}\.docsite\.\S*:\n)(?=\S)", re.MULTILINE)
URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
# The RST pages' lines: at most 100 characters, as the repository's other files.
RST_COLUMNS = "--columns=100"


class GuideError(Exception):
    """A guide the site cannot take: unlisted, without title, or with a link to nowhere."""


def listed_guides(root: pathlib.Path) -> list[str]:
    """The guides extra-docs.yml lists, in order; every guide of docs/ must be listed, and every
    listed one must exist."""
    index = yaml.safe_load((root / EXTRA_DOCS).read_text(encoding="utf-8"))
    refs = [entry["ref"] if isinstance(entry, dict) else entry
            for section in index["sections"] for entry in section["toctree"]]
    guides = {path.stem for path in (root / "docs").glob("*.md")}
    problems = [f"{EXTRA_DOCS} lists {ref}, but there is no docs/{ref}.md" for ref in refs if ref not in guides]
    problems += [f"docs/{guide}.md is not listed in {EXTRA_DOCS}" for guide in sorted(guides - set(refs))]
    if problems:
        raise GuideError("\n".join(problems))
    return refs


def repository_url(root: pathlib.Path) -> str:
    galaxy = yaml.safe_load((root / "galaxy.yml").read_text(encoding="utf-8"))
    return galaxy["repository"].rstrip("/")


def plain_text(inlines: list) -> str:
    """The text of pandoc inlines, markup dropped (an RST role's text cannot hold markup)."""
    parts = []
    for node in inlines:
        kind, content = node["t"], node.get("c")
        if kind == "Str":
            parts.append(content)
        elif kind in ("Space", "SoftBreak", "LineBreak"):
            parts.append(" ")
        elif kind in ("Code", "Math", "RawInline"):
            parts.append(content[1])
        elif kind in ("Link", "Image", "Span", "Quoted", "Cite"):
            parts.append(plain_text(content[-2] if kind in ("Link", "Image") else content[-1]))
        elif isinstance(content, list):
            parts.append(plain_text(content))
    return "".join(parts)


def ref_role(label: str, text: str | None) -> dict:
    """An RST :ref: as a raw inline; without text, Sphinx shows the target's title."""
    if text is None:
        return {"t": "RawInline", "c": ["rst", f":ref:`{label}`"]}
    escaped = re.sub(r"([`<>\\])", r"\\\1", text)
    return {"t": "RawInline", "c": ["rst", f":ref:`{escaped} <{label}>`"]}


def section_label(guide: str, anchor: str) -> str:
    return f"{PAGE_LABEL.format(guide=guide)}.{anchor}"


def bundled_pandoc() -> pathlib.Path:
    """The pandoc binary of pypandoc-binary, the release requirements/constraints.txt pins: the
    pages must not change with a pandoc that happens to be on PATH (pypandoc would take the
    newest it finds)."""
    import pypandoc  # the docs tools' (requirements/controller.txt), not the collection's

    return pathlib.Path(pypandoc.__file__).resolve().parent / "files" / "pandoc"


class Pandoc:
    """Runs one pandoc binary."""

    def __init__(self, binary: pathlib.Path):
        self.binary = binary

    def convert(self, text: str, source: str, target: str, *options: str) -> str:
        done = subprocess.run([str(self.binary), "--from", source, "--to", target, *options], input=text,
                              capture_output=True, text=True, encoding="utf-8", check=False)
        if done.returncode:
            raise GuideError(f"pandoc --from {source} --to {target} failed: {done.stderr.strip()}")
        return done.stdout


class Guides:
    """The listed guides as pandoc document trees (GitHub's Markdown, with GitHub's heading
    anchors), and where their links lead on the site."""

    def __init__(self, root: pathlib.Path, pandoc: Pandoc):
        self.root = root
        self.pandoc = pandoc
        self.repository = repository_url(root)
        self.names = listed_guides(root)
        self.trees = {name: json.loads(pandoc.convert(
            (root / "docs" / f"{name}.md").read_text(encoding="utf-8"), "gfm", "json"))
            for name in self.names}
        # guide -> {GitHub anchor: heading level}
        self.headings = {name: {block["c"][1][0]: block["c"][0] for block in tree["blocks"]
                                if block["t"] == "Header"} for name, tree in self.trees.items()}
        self.linked_sections: set[tuple[str, str]] = set()

    def site_target(self, guide: str, target: str) -> tuple[str, str] | None:
        """(label, kind) of a link of ``guide`` that leads to a page of the site, kind being
        "page", "section" or "reference"; None for a link out of the site."""
        if URL_SCHEME.match(target):
            return None
        path, _, anchor = target.partition("#")
        if not path:
            path = f"{guide}.md"
        resolved = posixpath.normpath(posixpath.join("docs", path))
        folder, file_name = posixpath.split(resolved)
        stem, suffix = posixpath.splitext(file_name)
        if folder == "docs/reference" and suffix == ".md":
            if anchor:
                raise GuideError(f"docs/{guide}.md links to {target}: the site's reference pages "
                                 "have other anchors; link the page")
            return (INDEX_LABEL if stem == "README" else f"ansible_collections.{NAMESPACE}.{NAME}.{stem}",
                    "reference")
        if folder != "docs" or suffix != ".md":
            return None
        if stem not in self.headings:
            raise GuideError(f"docs/{guide}.md links to {target}, which is no guide of the site")
        if not anchor:
            return PAGE_LABEL.format(guide=stem), "page"
        if anchor not in self.headings[stem]:
            raise GuideError(f"docs/{guide}.md links to {target}: docs/{stem}.md has no heading "
                             f"with anchor #{anchor}")
        if self.headings[stem][anchor] == 1:
            return PAGE_LABEL.format(guide=stem), "page"
        self.linked_sections.add((stem, anchor))
        return section_label(stem, anchor), "section"

    def repository_link(self, target: str) -> str:
        """A link of a guide to a file of the repository that is no page of the site."""
        path, hash_sign, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join("docs", path))
        kind = "tree" if path.endswith("/") or (self.root / resolved).is_dir() else "blob"
        return f"{self.repository}/{kind}/main/{resolved}{hash_sign}{anchor}"

    def place_link(self, guide: str, link: dict) -> dict:
        _attributes, inlines, (target, _title) = link["c"]
        site = self.site_target(guide, target)
        text = plain_text(inlines)
        if site is None:
            if not URL_SCHEME.match(target):
                link["c"][2][0] = self.repository_link(target)
            if any(node["t"] not in ("Str", "Space", "SoftBreak") for node in inlines):
                # RST has no markup inside a link's text: ``examples/`` would be a broken link.
                link["c"][1] = [{"t": "Str", "c": text}]
            return link
        label, kind = site
        if not (text.endswith(".md") or text == target.partition("#")[0]):
            return ref_role(label, text)
        if kind == "reference" and label != INDEX_LABEL:
            # A file name of docs/reference/ stands for the module or role: its name instead.
            return ref_role(label, f"{NAMESPACE}.{NAME}.{label.rsplit('.', 1)[1].rsplit('_', 1)[0]}")
        return ref_role(label, None)  # Sphinx shows the guide's or section's title

    def place_links(self, guide: str, node):
        """Replaces, in place, every link of the tree under ``node``."""
        if isinstance(node, list):
            for index, child in enumerate(node):
                if isinstance(child, dict) and child.get("t") == "Link":
                    node[index] = self.place_link(guide, child)
                else:
                    self.place_links(guide, child)
        elif isinstance(node, dict):
            for value in node.values():
                if isinstance(value, (list, dict)):
                    self.place_links(guide, value)

    def label_headings(self, guide: str, blocks: list) -> list:
        """The blocks with the page's label before its title and a label before each linked
        heading; pandoc's own identifiers are dropped (links to them are references now)."""
        if not blocks or blocks[0]["t"] != "Header" or blocks[0]["c"][0] != 1:
            raise GuideError(f"docs/{guide}.md does not start with its title (a '# ' heading)")
        labelled = []
        for block in blocks:
            if block["t"] == "Header":
                _level, (anchor, classes, attributes), _inlines = block["c"]
                if block is blocks[0]:
                    labelled.append(raw_label(PAGE_LABEL.format(guide=guide)))
                elif (guide, anchor) in self.linked_sections:
                    labelled.append(raw_label(section_label(guide, anchor)))
                block["c"][1] = ["", classes, attributes]
            labelled.append(block)
        return labelled

    def render(self) -> dict[str, str]:
        """{file name under docs/docsite/rst/: its text} for every listed guide."""
        for name, tree in self.trees.items():
            self.place_links(name, tree["blocks"])
        pages = {}
        for name, tree in self.trees.items():
            tree["blocks"] = self.label_headings(name, tree["blocks"])
            rst = self.pandoc.convert(json.dumps(tree), "json", "rst", RST_COLUMNS)
            # Pandoc puts no blank line after a raw block; RST needs one after a label.
            rst = OWN_LABEL_LINE.sub(r"\1\n", rst)
            pages[f"{name}.rst"] = HEADER.format(guide=name) + rst.rstrip("\n") + "\n"
        return pages


def raw_label(label: str) -> dict:
    return {"t": "RawBlock", "c": ["rst", f".. _{label}:"]}


def render(root: pathlib.Path) -> dict[str, str]:
    return Guides(root, Pandoc(bundled_pandoc())).render()


def differences(root: pathlib.Path, pages: dict[str, str]) -> list[str]:
    """What differs between the pages and docs/docsite/rst/ as it is."""
    dest = root / RST_DIR
    present = {path.name for path in dest.glob("*.rst")} if dest.is_dir() else set()
    found = [f"{RST_DIR}/{name} is no page of a listed guide" for name in sorted(present - set(pages))]
    for name, text in pages.items():
        path = dest / name
        if not path.is_file():
            found.append(f"{RST_DIR}/{name} is missing")
        elif path.read_bytes() != text.encode("utf-8"):
            found.append(f"{RST_DIR}/{name} is not what docs/{name[:-4]}.md gives")
    return found


def write(root: pathlib.Path, pages: dict[str, str]) -> None:
    dest = root / RST_DIR
    dest.mkdir(parents=True, exist_ok=True)
    for stale in set(path.name for path in dest.glob("*.rst")) - set(pages):
        (dest / stale).unlink()
    for name, text in pages.items():
        (dest / name).write_bytes(text.encode("utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[1],
                        help="the collection's root (default: this repository)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; fail if docs/docsite/rst/ is not what the guides give")
    args = parser.parse_args()
    try:
        pages = render(args.root)
    except GuideError as error:
        print(error, file=sys.stderr)
        return 1
    if args.check:
        found = differences(args.root, pages)
        for problem in found:
            print(problem, file=sys.stderr)
        if found:
            print("run python scripts/guides_rst.py and commit docs/docsite/rst/", file=sys.stderr)
        return 1 if found else 0
    write(args.root, pages)
    print(f"wrote {len(pages)} guides to {RST_DIR}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
