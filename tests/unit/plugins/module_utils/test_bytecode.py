# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The import hook that keeps the module_utils' compiled code (``_bytecode.py``). Each case
builds a zip laid out as a module's payload (the real ``_bytecode.py`` beside two stand-in
module_utils, one of them a package) and imports from it in a fresh interpreter, counting the
calls of ``compile``."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import zipfile

PACKAGE_DIR = "ansible_collections/cnikit/cni/plugins/module_utils"
PACKAGE = PACKAGE_DIR.replace("/", ".")
HOOK_SOURCE = (pathlib.Path(__file__).parents[4] / "plugins" / "module_utils" / "_bytecode.py").read_bytes()
CACHE_TAG = sys.implementation.cache_tag

PROBE = """
def where():
    raise RuntimeError("probe")

VALUE = {value}
"""


def payload(path: pathlib.Path, value: int = 1) -> pathlib.Path:
    """A zip as Ansible sends a module: the packages' __init__ files, the hook, ``_probe`` and the
    package ``_pkg`` with the submodule ``leaf``."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        parts = PACKAGE_DIR.split("/")
        for depth in range(1, len(parts) + 1):
            archive.writestr("/".join(parts[:depth]) + "/__init__.py", "")
        archive.writestr(f"{PACKAGE_DIR}/_bytecode.py", HOOK_SOURCE)
        archive.writestr(f"{PACKAGE_DIR}/_probe.py", PROBE.format(value=value))
        archive.writestr(f"{PACKAGE_DIR}/_pkg/__init__.py", "PACKAGE_VALUE = 'package'\n")
        archive.writestr(f"{PACKAGE_DIR}/_pkg/leaf.py", "from .. import _probe\nLEAF_VALUE = _probe.VALUE * 10\n")
    return path


def run(sys_path_entry: pathlib.Path, cache_home: pathlib.Path, **env) -> dict:
    """Import the hook, then ``_probe`` and ``_pkg.leaf``, from ``sys_path_entry``; report what
    was compiled, the values and the probe's traceback."""
    child = f"""
import builtins, json, sys, traceback
sys.path.insert(0, {str(sys_path_entry)!r})
from {PACKAGE} import _bytecode
compiled = []
real_compile = builtins.compile
def counting_compile(source, filename, *args, **kwargs):
    if filename.endswith(".py"):
        compiled.append(filename.rpartition("/")[2])
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting_compile
from {PACKAGE} import _probe
from {PACKAGE}._pkg import leaf
from {PACKAGE} import _pkg
try:
    _probe.where()
except RuntimeError:
    trace = traceback.format_exc()
print(json.dumps({{
    "compiled": sorted(compiled), "value": _probe.VALUE, "leaf": leaf.LEAF_VALUE, "package": _pkg.PACKAGE_VALUE,
    "code_file": _probe.where.__code__.co_filename, "module_file": _probe.__file__, "trace": trace,
    "hooked": any(type(finder).__name__ == "CachingFinder" for finder in sys.meta_path),
}}))
"""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    environment.update({"XDG_CACHE_HOME": str(cache_home), **env})
    return json.loads(subprocess.run([sys.executable, "-c", child], env=environment, capture_output=True,
                                     text=True, check=True, cwd=cache_home.parent).stdout)


def kept_dir(cache_home: pathlib.Path) -> pathlib.Path:
    return cache_home / "cnikit" / "bytecode" / CACHE_TAG


def test_the_first_run_compiles_each_module_utils_once_and_keeps_its_code(tmp_path):
    report = run(payload(tmp_path / "one.zip"), tmp_path / "home")
    assert report["compiled"] == ["__init__.py", "_probe.py", "leaf.py"]  # once each, not twice as zipimport does
    assert (report["value"], report["leaf"], report["package"]) == (1, 10, "package")
    kept = kept_dir(tmp_path / "home")
    assert sorted(path.name for path in kept.iterdir()) == ["_pkg.leaf.pyc", "_pkg.pyc", "_probe.pyc"]
    assert kept.stat().st_mode & 0o777 == 0o700
    assert (kept / "_probe.pyc").stat().st_mode & 0o777 == 0o600


def test_a_later_run_compiles_nothing_and_its_code_names_its_own_payload(tmp_path):
    run(payload(tmp_path / "one.zip"), tmp_path / "home")
    second = payload(tmp_path / "two.zip")
    report = run(second, tmp_path / "home")
    assert report["compiled"] == []
    assert (report["value"], report["leaf"], report["package"]) == (1, 10, "package")
    assert report["code_file"] == report["module_file"] == f"{second}/{PACKAGE_DIR}/_probe.py"
    assert 'raise RuntimeError("probe")' in report["trace"]  # the traceback shows the source line


def test_a_changed_source_is_compiled_again_and_replaces_the_kept_code(tmp_path):
    run(payload(tmp_path / "one.zip"), tmp_path / "home")
    report = run(payload(tmp_path / "two.zip", value=2), tmp_path / "home")
    assert report["compiled"] == ["_probe.py"]
    assert (report["value"], report["leaf"]) == (2, 20)
    assert run(payload(tmp_path / "three.zip", value=2), tmp_path / "home")["compiled"] == []


def test_kept_code_of_another_python_or_damaged_is_compiled_again(tmp_path):
    run(payload(tmp_path / "one.zip"), tmp_path / "home")
    kept = kept_dir(tmp_path / "home")
    (kept / "_probe.pyc").write_bytes(b"\0" * 16 + (kept / "_probe.pyc").read_bytes()[16:])
    (kept / "_pkg.leaf.pyc").write_bytes((kept / "_pkg.leaf.pyc").read_bytes()[:20])
    report = run(payload(tmp_path / "two.zip"), tmp_path / "home")
    assert report["compiled"] == ["_probe.py", "leaf.py"]
    assert (report["value"], report["leaf"]) == (1, 10)


def test_a_directory_others_can_write_is_not_used(tmp_path):
    kept = kept_dir(tmp_path / "home")
    kept.mkdir(parents=True)
    kept.chmod(0o777)
    for _run in range(2):
        report = run(payload(tmp_path / "one.zip"), tmp_path / "home")
        assert report["compiled"] == ["__init__.py", "_probe.py", "leaf.py"]
        assert report["value"] == 1
    assert list(kept.iterdir()) == []


def test_pythondontwritebytecode_keeps_nothing(tmp_path):
    report = run(payload(tmp_path / "one.zip"), tmp_path / "home", PYTHONDONTWRITEBYTECODE="1")
    assert report["compiled"] == ["__init__.py", "_probe.py", "leaf.py"]
    assert report["value"] == 1
    assert not (tmp_path / "home").exists()


def test_a_relative_xdg_cache_home_is_ignored_for_the_home_directory(tmp_path):
    report = run(payload(tmp_path / "one.zip"), tmp_path / "home", XDG_CACHE_HOME="relative", HOME=str(tmp_path / "user"))
    assert report["value"] == 1
    assert (tmp_path / "user" / ".cache" / "cnikit" / "bytecode" / CACHE_TAG / "_probe.pyc").is_file()
    assert not (tmp_path / "home").exists()
    assert not (tmp_path / "relative").exists()


def test_imported_from_files_it_adds_no_hook(tmp_path):
    tree = tmp_path / "tree"
    with zipfile.ZipFile(payload(tmp_path / "one.zip")) as archive:
        archive.extractall(tree)
    report = run(tree, tmp_path / "home")
    assert report["hooked"] is False
    assert report["value"] == 1
    assert not (tmp_path / "home").exists()
