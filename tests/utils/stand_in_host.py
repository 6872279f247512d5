# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the services take in place of _ansible_glue.ModuleHost when a test runs them without
Ansible: the same methods, recording warnings and turning a failed task into an exception."""

from __future__ import annotations

import os
import shutil
import subprocess


def run_command(argv: list) -> tuple:
    """A module's ``run_command`` as ``_ansible_glue.command_runner`` hands it to the services and
    the executor (which asks the package manager with it for a release): ``(rc, stdout, stderr)``
    in the C locale, rc 127 with the reason for a program that cannot be started."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env={**os.environ, "LC_ALL": "C"})
    except OSError as exc:
        return 127, "", str(exc)
    return done.returncode, done.stdout, done.stderr


class TaskFailed(Exception):
    """The service ended the task as failed: ``msg`` and the result it failed with."""

    def __init__(self, msg: str, result: dict):
        super().__init__(msg)
        self.msg = msg
        self.result = result


class StandInHost:
    def __init__(self, tmpdir: str, check_mode: bool = False, diff: bool = False, missing: tuple = ()):
        self.tmpdir = tmpdir
        self.check_mode = check_mode
        self.diff = diff
        self.warnings = []
        self.hidden = []
        # Libraries the host stands in as lacking (the test virtualenvs have them all).
        self.missing = tuple(missing)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def fail(self, msg: str, **result) -> None:
        raise TaskFailed(msg, result)

    def require_libraries(self, *names: str) -> None:
        """The test virtualenvs install them (requirements/managed-node.txt); ``missing`` says
        which the host stands in as lacking."""
        lacking = self.missing_libraries(*names)
        if lacking:
            self.fail(f"missing required libraries: {', '.join(lacking)}")

    def missing_libraries(self, *names: str) -> list:
        return [name for name in names if name in self.missing]

    def hide(self, secret: str) -> None:
        self.hidden.append(secret)

    run_command = staticmethod(run_command)

    @staticmethod
    def backup(path: str) -> str:
        copy = f"{path}.backup"
        shutil.copy2(path, copy)
        return copy

    @staticmethod
    def set_file_attributes(_path: str, _mode: int, _uid, _gid, _diff: dict) -> bool:
        """The write already gave the file its mode and owner; SELinux and chattr are Ansible's."""
        return False

    def fetch(self, url: str, timeout: float):
        raise AssertionError(f"no download expected in this test ({url}, {timeout} s)")
