# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Sort the warnings of the docs site's build (the build.sh of antsibull-docs sphinx-init).

build.sh runs Sphinx with -W --keep-going, so any warning fails it, and here some always come:
the intersphinx inventories (docs.ansible.com, docs.python.org) are out of reach, and every
reference to a label only they hold (``common_return_values``, the ansible.builtin modules) stays
undefined. The warnings fall into three kinds:

- the collection's own: located in one of its pages (rst/collections/cnikit/cni/: module and
  role pages, the guides of docs/docsite/rst/, the changelog, the index) or naming one of its
  labels (ansible_collections.cnikit.cni.*), unless an unreachable inventory explains it. These
  fail the docs stage.
- the network's: an inventory that could not be read, and the undefined labels of other
  collections or of the Ansible docs while one could not. Reported.
- the others': located in pages antsibull-docs writes for every site (rst/index.rst,
  rst/collections/environment_variables.rst, ...) or in none, from Sphinx or its extensions.
  Reported.

A failed build without any warning (antsibull-docs or Sphinx stopped) fails as well.

Run by the docs stage of scripts/test.sh: docsite.py warnings --status <build.sh's status> LOG."""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

NAMESPACE, NAME = "cnikit", "cni"
OWN_LABELS = f"ansible_collections.{NAMESPACE}.{NAME}."
# The folder of the collection's pages in the site's sources, as a warning's location names it.
OWN_PAGES = f"/collections/{NAMESPACE}/{NAME}/"
# The start of a warning (or worse) of sphinx-build or docutils, located or not.
PROBLEM = re.compile(r"(^|: )(WARNING|ERROR|CRITICAL|SEVERE):")
# Sphinx's message when no copy of an intersphinx inventory could be read (the issues follow it).
UNREACHABLE_INVENTORY = "failed to reach any of the inventories"
# A reference to a label Sphinx does not know: found in an inventory when that is reachable.
UNDEFINED_LABEL = re.compile(r"undefined label: '([^']*)'")
# "<path>:<line>: WARNING: ...": the file a warning is located in.
LOCATION = re.compile(r"^(\S+?):(\d+:)? (WARNING|ERROR|CRITICAL|SEVERE):")


def split_warnings(log: str) -> list[str]:
    """The warnings of a Sphinx log (stderr), each with the lines that follow it (an inventory's
    issues, a traceback)."""
    found: list[str] = []
    for line in log.splitlines():
        if PROBLEM.search(line) or not found:
            found.append(line)
        elif line.strip():
            found[-1] += "\n" + line
    return [warning for warning in found if PROBLEM.search(warning)]


def concerns_the_collection(warning: str) -> bool:
    location = LOCATION.match(warning)
    return bool(location and OWN_PAGES in location.group(1)) or OWN_LABELS in warning


def sort_warnings(found: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(the network's, the collection's own, the others') warnings.

    While an inventory is unreachable, a label outside this collection (the Ansible docs'
    ``common_return_values``, ``ansible_collections.ansible.builtin.file_module``, ...) cannot be
    resolved either: that is the inventory's warning too. A label of this collection never is."""
    network = [w for w in found if UNREACHABLE_INVENTORY in w]
    if network:
        for warning in found:
            label = UNDEFINED_LABEL.search(warning)
            if label and not label.group(1).startswith(OWN_LABELS):
                network.append(warning)
    rest = [w for w in found if w not in network]
    own = [w for w in rest if concerns_the_collection(w)]
    return network, own, [w for w in rest if w not in own]


def warnings(args: argparse.Namespace) -> int:
    log = args.log.read_text(encoding="utf-8")
    network, own, others = sort_warnings(split_warnings(log))
    for warning in network:
        print(f"network inventory not reachable: {warning}")
    for warning in others:
        print(f"not the collection's (Sphinx, or a page antsibull-docs writes for every site): {warning}")
    for warning in own:
        print(f"the collection's docs: {warning}")
    print(f"{len(own)} warnings of the collection's docs; {len(network)} about network inventories "
          f"that could not be reached (their cross-references stay plain text); {len(others)} others")
    if args.status and not (network or own or others):
        print(f"the build failed (exit {args.status}) without a warning:\n{log}")
        return 1
    return 1 if own else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    sort = commands.add_parser("warnings", help="sort the warnings of build.sh's stderr")
    sort.add_argument("--status", type=int, default=0, help="build.sh's exit status")
    sort.add_argument("log", type=pathlib.Path)
    sort.set_defaults(run=warnings)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
