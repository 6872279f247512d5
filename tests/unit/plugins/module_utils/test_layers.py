# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Imports point down: no module_utils file imports one of a higher layer, at module level or
inside a function, and the imports inside a layer form no cycle. The layers are CONTRIBUTING.md's
table ("The layers of module_utils"), read from there, so the document and this test cannot
drift apart."""

from __future__ import annotations

import ast
import fnmatch
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parents[4]
MODULE_UTILS = ROOT / "plugins" / "module_utils"
PACKAGE = "ansible_collections.cnikit.cni.plugins.module_utils"
SECTION = "## The layers of module_utils"


def layers() -> list:
    """``[(layer name, [file patterns])]``, top layer first, from CONTRIBUTING.md's table."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ")]
    return [(cells[0].strip(), re.findall(r"`([^`]+)`", cells[1])) for cells in rows[1:]]


def files() -> list:
    return sorted(str(path.relative_to(MODULE_UTILS)) for path in MODULE_UTILS.rglob("*.py"))


def layer_of(name: str) -> int | None:
    """The index of the layer whose patterns match ``name`` (0 is the top); None when none does."""
    matches = [index for index, (_layer, patterns) in enumerate(layers())
               if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)]
    assert len(matches) <= 1, f"{name} is in more than one layer of CONTRIBUTING.md"
    return matches[0] if matches else None


def _file_of(module: str) -> str | None:
    """The module_utils file a dotted module name (relative to module_utils) is, if any."""
    for candidate in (module.replace(".", "/") + ".py", module.replace(".", "/") + "/__init__.py"):
        if (MODULE_UTILS / candidate).is_file():
            return candidate
    return None


def imported_files(name: str, source: str | None = None) -> list:
    """``[(line, file)]`` of the module_utils files ``name`` imports, wherever in it (``ast``
    walks function bodies too): ``from .x import y``, ``from . import x``, absolute imports of the
    collection's module_utils. ``source``: the text to read instead of the file's."""
    package = pathlib.PurePosixPath(name).parent.parts
    tree = ast.parse(source if source is not None else (MODULE_UTILS / name).read_text(encoding="utf-8"), name)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            stem = list(package[:len(package) - (node.level - 1)]) + (node.module.split(".") if node.module else [])
            imported = [(".".join(stem), alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE + "."):
            imported = [(node.module[len(PACKAGE) + 1:], alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            imported = [(alias.name[len(PACKAGE) + 1:], "") for alias in node.names if alias.name.startswith(PACKAGE + ".")]
        else:
            continue
        # ``from . import _cache`` names a file; ``from ._cache import x`` names one through its module.
        targets = [_file_of(f"{module}.{member}".strip(".")) or _file_of(module) for module, member in imported]
        found += [(node.lineno, target) for target in dict.fromkeys(targets) if target and target != name]
    return found


def test_the_table_is_there():
    assert [layer for layer, _patterns in layers()][:1] == ["tasks"] and len(layers()) >= 5


@pytest.mark.parametrize("name", files())
def test_every_file_has_a_layer(name):
    assert layer_of(name) is not None, f"{name}: add it to a layer of CONTRIBUTING.md's '{SECTION[3:]}'"


@pytest.mark.parametrize("name", files())
def test_no_file_imports_from_a_higher_layer(name):
    own = layer_of(name)
    higher = [f"line {line}: {target} ({layers()[layer_of(target)][0]})" for line, target in imported_files(name)
              if own is not None and layer_of(target) is not None and layer_of(target) < own]
    assert higher == [], f"{name} ({layers()[own][0]}) imports from a higher layer"


def test_no_cycle_inside_a_layer():
    edges = {name: {target for _line, target in imported_files(name) if layer_of(target) == layer_of(name)}
             for name in files()}
    state = {}

    def cycle_from(name, path):
        state[name] = "open"
        for target in sorted(edges[name]):
            if state.get(target) == "open":
                return path + [name, target]
            if target not in state:
                found = cycle_from(target, path + [name])
                if found:
                    return found
        state[name] = "done"
        return None

    cycles = [found for name in files() if name not in state for found in [cycle_from(name, [])] if found]
    assert cycles == []


def test_an_import_inside_a_function_counts():
    source = "from . import _errors\n\n\ndef late():\n    from ._exec import PluginExecutor\n"
    assert imported_files("_cache.py", source) == [(1, "_errors.py"), (5, "_exec.py")]
    assert imported_files("_validation/host.py", "from .._conflist import x\nfrom .report import y\n") == \
        [(1, "_conflist.py"), (2, "_validation/report.py")]
    assert imported_files("_attach.py", "from . import _cache, _netns\n") == [(1, "_cache.py"), (1, "_netns.py")]


MODULES = sorted((ROOT / "plugins" / "modules").glob("cni_*.py"))
ACTIONS = sorted((ROOT / "plugins" / "action").glob("cni_*.py"))


@pytest.mark.parametrize("module", [path for path in MODULES if "def main(" in path.read_text(encoding="utf-8")],
                         ids=lambda path: path.stem)
def test_a_module_runs_its_task_file(module):
    """CONTRIBUTING.md, "Adding a module": module cni_<name>'s task is ``_<name>_task.py``."""
    task = f"_{module.stem.removeprefix('cni_')}_task"
    assert (MODULE_UTILS / f"{task}.py").is_file()
    assert f"run_module({task})" in module.read_text(encoding="utf-8")


@pytest.mark.parametrize("module", [path for path in MODULES if "def main(" in path.read_text(encoding="utf-8")],
                         ids=lambda path: path.stem)
def test_a_module_imports_the_bytecode_hook_before_the_collection(module):
    """CONTRIBUTING.md, "Adding a module": the hook only serves the module_utils imported after it."""
    imports = [line for line in module.read_text(encoding="utf-8").splitlines()
               if line.startswith("from ansible_collections.cnikit.cni.")]
    assert imports[0].startswith("from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  ")


@pytest.mark.parametrize("action", [path for path in ACTIONS if "_execute_module" not in path.read_text(encoding="utf-8")],
                         ids=lambda path: path.stem)
def test_an_action_that_runs_no_module_runs_its_task_file(action):
    assert f"module_utils._{action.stem.removeprefix('cni_')}_task import" in action.read_text(encoding="utf-8")


def test_no_module_utils_file_imports_a_task_file():
    importers = [(name, target) for name in files() for _line, target in imported_files(name)
                 if fnmatch.fnmatchcase(target, "_*_task.py")]
    assert importers == []
