# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Ansible glue's failures: a missing managed-node library named with the interpreter and
the fixes, and the one sentence saying that root is needed."""

from __future__ import annotations

import errno
import importlib
import importlib.machinery
import pathlib
import re
import sys

import pytest
import yaml

from ansible_collections.cnikit.cni.plugins.module_utils import _ansible_glue as glue
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._netns import NetnsError


MANAGED_NODE_REQUIREMENTS = pathlib.Path(__file__).parents[4] / "requirements" / "managed-node.txt"


class Failed(Exception):
    pass


class FakeModule:
    """Records fail_json's arguments and stops the caller, as AnsibleModule does."""

    def fail_json(self, **kwargs):
        raise Failed(kwargs)


def failure(call, *args, **kwargs) -> dict:
    with pytest.raises(Failed) as raised:
        call(FakeModule(), *args, **kwargs)
    return raised.value.args[0]


def test_a_missing_library_is_named_with_the_interpreter_and_every_fix(monkeypatch):
    monkeypatch.setitem(glue.LIBRARIES, "cnit_absent_library", ("1.2.3", "to test the message"))
    msg = failure(glue.require_libraries, "jsonschema", "cnit_absent_library")["msg"]
    assert "Failed to import the required Python library (cnit_absent_library)" in msg
    assert sys.executable in msg
    assert "This is required to test the message." in msg
    for fix in ("cnikit.cni.plugins role", "python3-cnit_absent_library package",
                "pip install 'cnit_absent_library>=1.2.3'", "ansible_python_interpreter"):
        assert fix in msg


def test_present_libraries_pass():
    glue.require_libraries(FakeModule(), *glue.LIBRARIES)


def test_a_library_older_than_its_tested_floor_is_named_with_both_versions(monkeypatch):
    from importlib.metadata import version
    monkeypatch.setitem(glue.LIBRARIES, "jsonschema", ("999.0", "to validate network configurations"))
    msg = failure(glue.require_libraries, "jsonschema")["msg"]
    assert msg.startswith(f"jsonschema {version('jsonschema')} is older than 999.0, the oldest this collection is tested with")
    assert sys.executable in msg
    assert "pip install 'jsonschema>=999.0'" in msg and "ansible_python_interpreter" in msg


@pytest.mark.parametrize("metadata_dir, expected", [
    ("cnitlib-4.10.3.dist-info", "4.10.3"),        # pip, and Debian 12's packages
    ("cnitlib-0.5.14.egg-info", "0.5.14"),         # Debian 11's packages
    ("cnitlib-0.5.14-py3.9.egg-info", "0.5.14"),   # pip installing from an sdist on Python 3.9
    ("cnitlib_other-9.9.dist-info", None),         # another distribution's
    (None, None),                                  # a copy on PYTHONPATH
])
def test_a_library_version_is_read_from_the_metadata_beside_it(tmp_path, metadata_dir, expected):
    (tmp_path / "cnitlib").mkdir()
    (tmp_path / "cnitlib" / "__init__.py").write_text("")
    if metadata_dir:
        (tmp_path / metadata_dir).mkdir()
    spec = importlib.machinery.PathFinder.find_spec("cnitlib", [str(tmp_path)])
    assert glue._installed_version(spec) == expected


def test_the_newest_of_two_metadata_directories_counts(tmp_path):
    for name in ("cnitlib.py", "cnitlib-0.9.dist-info", "cnitlib-0.10.dist-info"):
        (tmp_path / name).mkdir() if name.endswith("info") else (tmp_path / name).write_text("")
    spec = importlib.machinery.PathFinder.find_spec("cnitlib", [str(tmp_path)])
    assert glue._installed_version(spec) == "0.10"


def _floors_for_this_python() -> dict:
    """{library: minimum} of requirements/managed-node.txt's lines whose python_version markers
    hold for the Python running the tests."""
    python = sys.version_info[:2]
    floors = {}
    for line in MANAGED_NODE_REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        requirement, _sep, marker = line.partition(";")
        bounds = re.findall(r'python_version\s*(<|>=)\s*"(\d+)\.(\d+)"', marker)
        if all((python < (int(major), int(minor))) == (op == "<") for op, major, minor in bounds):
            name, minimum = requirement.strip().split(">=")
            floors[name] = minimum
    return floors


def test_the_floors_are_those_of_the_managed_node_requirements():
    """The module payload cannot read requirements/managed-node.txt, the floors' one home."""
    assert {name: minimum for name, (minimum, _use) in glue.LIBRARIES.items()} == _floors_for_this_python()


def permission_error() -> NetnsError:
    try:
        try:
            raise PermissionError(errno.EPERM, "mount rundir failed")
        except OSError as exc:
            raise NetnsError(f"cannot create network namespace x: {exc}") from exc
    except NetnsError as error:
        return error


@pytest.mark.parametrize("error", [permission_error(), PermissionError(errno.EACCES, "Permission denied")])
def test_without_root_a_refusal_says_root_is_needed(monkeypatch, error):
    monkeypatch.setattr(glue.os, "geteuid", lambda: 1000)
    result = failure(glue.fail_from_error, error, path="/x")
    assert result["msg"] == f"{error}. {glue.NEEDS_ROOT}"
    assert result["path"] == "/x"


def test_as_root_a_refusal_is_reported_as_it_is(monkeypatch):
    monkeypatch.setattr(glue.os, "geteuid", lambda: 0)
    error = permission_error()
    assert failure(glue.fail_from_error, error)["msg"] == str(error)


def test_without_root_other_errors_get_no_hint(monkeypatch):
    monkeypatch.setattr(glue.os, "geteuid", lambda: 1000)
    error = ConfigError("name", "must not be empty", "")
    result = failure(glue.fail_from_error, error)
    assert result["msg"] == str(error)
    assert result["error"] == {"path": "name", "value": ""}
    assert failure(glue.fail_from_error, FileNotFoundError(errno.ENOENT, "No such file"))["msg"] == \
        "[Errno 2] No such file"


def real_module():
    """An AnsibleModule with no options, as a module's main() makes it."""
    from ansible.module_utils.basic import AnsibleModule  # pylint: disable=import-outside-toplevel
    from module_harness import patch_module_args  # pylint: disable=import-outside-toplevel
    with patch_module_args({}):
        return AnsibleModule(argument_spec={})


def test_command_runner_is_run_command_in_the_c_locale():
    rc, out, err = glue.command_runner(real_module())(["sh", "-c", 'echo "$LC_ALL"; echo oops >&2; exit 3'])
    assert (rc, out, err) == (3, "C\n", "oops\n")


def test_command_runner_reports_a_program_that_cannot_start_instead_of_failing_the_task():
    rc, out, err = glue.command_runner(real_module())(["/nonexistent/cnit-no-such-program"])
    assert (rc, out) == (127, "")
    assert "No such file or directory" in err


def _floors_for_every_python() -> dict:
    """{library: {minimum, ...}} over every line of requirements/managed-node.txt."""
    floors = {}
    for line in MANAGED_NODE_REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        requirement = line.partition(";")[0].strip()
        if requirement and not requirement.startswith("#"):
            name, minimum = requirement.split(">=")
            floors.setdefault(name, set()).add(minimum)
    return floors


@pytest.mark.parametrize("module_name", ["cni_attach", "cni_info", "cni_netns", "cni_network"])
def test_the_modules_document_the_floors_of_the_managed_node_requirements(module_name):
    """A module's documented requirements are a spelling of the floors too: one that names a
    library names each of its floors, and no other version."""
    module = importlib.import_module(f"ansible_collections.cnikit.cni.plugins.modules.{module_name}")
    requirements = yaml.safe_load(module.DOCUMENTATION)["requirements"]
    floors = _floors_for_every_python()
    documented = {name: set(re.findall(r"(\d+(?:\.\d+)+) or later", line))
                  for line in requirements for name in floors if line.startswith(f"{name} ")}
    assert documented, f"{module_name} documents no library it needs"
    assert documented == {name: floors[name] for name in documented}
