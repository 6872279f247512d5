# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one fake executor of the unit tests: it runs nothing, records each plugin call, and
answers from what the test gave it. Hand it to whatever takes an executor (``Engine(...,
executor=fake)``, ``validate_on_host``, ``_facts.plugin_facts``) to see every plugin touch
without a binary; the test-double plugin (fakeplugin.py) is for tests that need a process."""

from __future__ import annotations

import os

from ansible_collections.cnikit.cni.plugins.module_utils._errors import PluginNotFoundError
from ansible_collections.cnikit.cni.plugins.module_utils._exec import Executor
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import check_plugin_type

FAKE_DIR = "/nonexistent/cnit-fake-bin"


class FakeExecutor(Executor):
    """Plugins ``missing`` are not found; every other type is ``<directory>/<type>``. VERSION
    answers ``versions[type]`` (``default_versions`` for a type not given), the release is
    ``releases[type]`` (None for a type not given); ADD prints ``add_result``, other verbs
    nothing. ``calls`` holds (plugin, verb, container ID, ifname, CNI_ARGS) of each call,
    ``probes`` each path asked VERSION."""

    def __init__(self, versions: dict | None = None, releases: dict | None = None, add_result: bytes = b"{}",
                 missing=(), directory: str = FAKE_DIR, default_versions=("1.0.0",)):
        self.cni_path = [directory]
        self.versions = dict(versions or {})
        self.releases = dict(releases or {})
        self.add_result = add_result
        self.missing = set(missing)
        self.default_versions = list(default_versions)
        self.calls: list = []
        self.probes: list = []

    def find(self, plugin_type: str) -> str:
        check_plugin_type(plugin_type)
        if plugin_type in self.missing:
            raise PluginNotFoundError(plugin_type, self.cni_path)
        return os.path.join(self.cni_path[0], plugin_type)

    def call(self, plugin_type: str, verb: str, stdin: bytes, container_id: str = "", netns: str = "",
             ifname: str = "", cni_args: str = "") -> bytes:
        self.find(plugin_type)
        self.calls.append((plugin_type, verb, container_id, ifname, cni_args))
        return self.add_result if verb == "ADD" else b""

    def supported_versions(self, plugin_type: str) -> list:
        return self.binary_versions(self.find(plugin_type))

    def binary_versions(self, path: str) -> list:
        self.probes.append(path)
        return list(self.versions.get(os.path.basename(path), self.default_versions))

    def release(self, plugin_type: str) -> str | None:
        return self.binary_release(self.find(plugin_type))

    def binary_release(self, path: str) -> str | None:
        return self.releases.get(os.path.basename(path))

    def installed_set(self, path: str) -> tuple:
        return None, None

    def manifest_problem(self, directory: str) -> str | None:
        return None
