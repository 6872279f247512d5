# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the unit tests (tests/conftest.py puts tests/utils on the import path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakeplugin import FakePlugins
import module_harness
import release_server
from cachehost import Host

from ansible_collections.cnikit.cni.plugins.module_utils import _verdicts
from ansible_collections.cnikit.cni.plugins.module_utils._defaults import DEFAULT_CACHE_DIR

# The releases the installer's tests (test_install, test_plugin_sets) download from `server`.
RELEASE_ARCH = "amd64"
RELEASE_V1, RELEASE_V2 = "1.1.1", "1.1.2"  # 1.1.2 has no sbr
STAND_IN_FLANNEL_VERSIONS = ("v1.9.1-flannel1", "v1.9.2-flannel1")


@pytest.fixture
def fake(tmp_path):
    """The test-double plugin, installed under any names into ``<tmp_path>/bin``."""
    return FakePlugins(tmp_path / "bin")


@pytest.fixture
def run_module(capsys):
    """``run_module(module, **args)``: a module's main() with ``args`` as Ansible passes them
    (add ``_ansible_check_mode``/``_ansible_diff`` for those modes); returns its JSON result."""
    def run(module, **args) -> dict:
        return module_harness.run_module(module, capsys, **args)
    return run


@pytest.fixture
def parse_arguments(capsys):
    """``parse_arguments(module, **args)``: ``(params, None)`` when the module's argument spec
    accepts ``args``, ``(None, failure result)`` when it does not; the module's logic never runs."""
    def parse(module, **args) -> tuple:
        return module_harness.parse_arguments(module, capsys, **args)
    return parse


@pytest.fixture(autouse=True)
def verdicts_kept_in_the_test(tmp_path_factory, monkeypatch):
    """cni_network and cni_info remember verdicts under their cache_dir (``_verdicts``); a test that leaves the
    default /var/lib/cni keeps them in its own directory, never in the machine's."""
    real, kept = _verdicts.verdict_path, str(tmp_path_factory.mktemp("default-cache-dir"))

    def in_the_test(cache_dir: str, source: str, reader: str) -> str:
        return real(kept if cache_dir == DEFAULT_CACHE_DIR else cache_dir, source, reader)
    monkeypatch.setattr(_verdicts, "verdict_path", in_the_test)


@pytest.fixture
def host(tmp_path):
    """A plugin dir with the test double, a conf dir and a cache dir of hand-written entries."""
    return Host(tmp_path)


# Here, not in a conftest.py of tests/unit/plugins/module_utils: the reliability tests, collected
# in the same pytest run, import their own conftest.py by that name, which a conftest.py found
# during collection would replace.
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Releases 1.1.1 and 1.1.2 built from the distro's binaries (each version's binaries differ),
    and releases in flannel's layout around the flannel stand-in (not flannel), on 127.0.0.1."""
    root = tmp_path_factory.mktemp("release")
    plugins = sorted(os.listdir(release_server.PLUGIN_SOURCE))
    release_server.build_release(str(root), RELEASE_V1, RELEASE_ARCH, patch={n: b"v1" for n in plugins})
    v2_plugins = [n for n in plugins if n != "sbr"]
    release_server.build_release(str(root), RELEASE_V2, RELEASE_ARCH, v2_plugins, patch={n: b"v2" for n in v2_plugins})
    flannel = {version: Path(release_server.build_stand_in_flannel(str(root), version, RELEASE_ARCH))
               for version in STAND_IN_FLANNEL_VERSIONS}
    httpd, base_url = release_server.start_server(str(root))
    yield {"root": root, "base_url": base_url, "flannel": flannel}
    httpd.shutdown()
