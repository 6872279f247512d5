# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The options a collection tree documents, read from the files (no Ansible, no import of a
module): each module's DOCUMENTATION with the collection's doc fragments merged in as ansible-doc
merges them, and each role's meta/argument_specs.yml. An option is named by its path,
suboptions joined with dots (``routes.dst``).

Run as a script, it prints the option sets of a tree as JSON: how
tests/unit/fixtures/options-1.0.0.json was made, from the tree of the 1.0.0 release
(``git archive 4ca7d49 | tar -x -C /tmp/cni-1.0.0``, then ``python documented_options.py
/tmp/cni-1.0.0``)."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path

import yaml

COLLECTION = "cnikit.cni."


def module_documentation(path: Path) -> dict:
    """A module's DOCUMENTATION, its fragments' options merged into its own."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    text = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and any(getattr(target, "id", None) == "DOCUMENTATION" for target in node.targets))
    doc = yaml.safe_load(text)
    options = dict(doc.get("options") or {})
    for name in doc.get("extends_documentation_fragment") or []:
        options.update(_fragment(path.parents[2], name).get("options") or {})
    doc["options"] = options
    return doc


def _fragment(root: Path, name: str) -> dict:
    """``cnikit.cni.<file>[.<variable>]`` of plugins/doc_fragments, or ``ansible.builtin.<file>``
    of ansible-core: DOCUMENTATION or the upper-cased variable of its ModuleDocFragment class."""
    namespace, collection, file, variable = (name.split(".") + [""])[:4]
    wanted = (variable or "documentation").upper()
    if f"{namespace}.{collection}." == COLLECTION:
        fragments = root / "plugins" / "doc_fragments"
    elif (namespace, collection) == ("ansible", "builtin"):
        # Read, not imported: importing ansible.plugins makes the process a controller, and
        # modules run later in the same test process would then send their warnings to the
        # controller's display instead of their results.
        fragments = Path(importlib.util.find_spec("ansible").origin).parent / "plugins" / "doc_fragments"
    else:
        raise ValueError(f"a doc fragment of another collection: {name}")
    tree = ast.parse((fragments / f"{file}.py").read_text(encoding="utf-8"))
    fragment_class = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "ModuleDocFragment")
    text = next(node.value.value for node in fragment_class.body if isinstance(node, ast.Assign)
                and any(getattr(target, "id", None) == wanted for target in node.targets))
    return yaml.safe_load(text)


def option_paths(options: dict, prefix: str = "") -> dict:
    """Every option and suboption of ``options`` by its dotted path, to its specification."""
    paths = {}
    for name, spec in (options or {}).items():
        paths[prefix + name] = spec
        paths.update(option_paths(spec.get("suboptions") or spec.get("options") or {}, f"{prefix}{name}."))
    return paths


def modules(root: Path) -> dict:
    """Each module's name to its DOCUMENTATION (fragments merged)."""
    return {path.stem: module_documentation(path) for path in sorted((root / "plugins" / "modules").glob("*.py"))
            if not path.name.startswith("_")}


def roles(root: Path) -> dict:
    """Each ``<role>`` and ``<role>:<entry point>`` (beyond main) to its argument spec."""
    entry_points = {}
    for spec_file in sorted((root / "roles").glob("*/meta/argument_specs.yml")):
        role = spec_file.parents[1].name
        for entry_point, spec in yaml.safe_load(spec_file.read_text(encoding="utf-8"))["argument_specs"].items():
            entry_points[role if entry_point == "main" else f"{role}:{entry_point}"] = spec
    return entry_points


def option_sets(root: Path) -> dict:
    """The snapshot's form: {"modules": {name: [paths]}, "roles": {entry point: [paths]}}."""
    return {kind: {name: sorted(option_paths(doc.get("options"))) for name, doc in found(root).items()}
            for kind, found in (("modules", modules), ("roles", roles))}


if __name__ == "__main__":
    json.dump(option_sets(Path(sys.argv[1])), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
