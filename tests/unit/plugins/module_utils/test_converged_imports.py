# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A converged task imports only what it uses (issue 33): every module_utils file it imports is
compiled from source on each run of the module payload. Each case runs in a fresh interpreter
and lists the collection's files it loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PACKAGE = "ansible_collections.cnikit.cni.plugins.module_utils"


def loaded_after(code: str) -> set:
    """The collection's module_utils (names under the package) loaded after running ``code``."""
    probe = code + f"\nimport json, sys\nprint(json.dumps(sorted(n for n in sys.modules if n.startswith('{PACKAGE}.'))))\n"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    return {name[len(PACKAGE) + 1:] for name in json.loads(run.stdout.splitlines()[-1])}


def test_cni_info_gathers_the_attachments_without_the_engine_or_the_executor(tmp_path):
    loaded = loaded_after(f"""
from {PACKAGE} import _info_task

class Host:
    run_command = None

    def warn(self, message):
        pass

result = {{}}
_info_task.run(Host(), {{"gather": ["attachments"], "cni_path": [], "cache_dir": "{tmp_path}", "conf_dir": "{tmp_path}",
                         "timeout": 20}}, result)
assert result["attachments"] == [], result
""")
    assert "_info_task" in loaded
    assert not loaded & {"_engine", "_exec", "_conflist", "_plugin_rules._common", "_validate"}


def test_cni_plugin_install_loads_no_plugin_rules():
    loaded = loaded_after(f"from {PACKAGE} import _plugin_install_task")
    assert "_plugin_rules.names" in loaded
    assert not {name for name in loaded if name.startswith("_plugin_rules.")} - {"_plugin_rules", "_plugin_rules.names"}


def test_cni_attach_loads_no_plugin_rules_until_a_verb_needs_them():
    """An ADD, a replace, a failed CHECK or a CHECK through a type that may be withheld import the
    rules; a converged run does none of them."""
    loaded = loaded_after(f"from {PACKAGE} import _attach_task")
    assert not {name for name in loaded if name.startswith("_plugin_rules.")} - {"_plugin_rules", "_plugin_rules.names"}


def test_cni_info_recalling_its_verdict_of_a_network_loads_no_validation(tmp_path):
    """The first gathering validates the network and keeps its verdict (_verdicts); the next
    recalls it without the validation or the plugins' rules (nor jsonschema, which only the
    validation's schema layer imports)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "conf").mkdir()
    (tmp_path / "cache").mkdir()
    for name in ("bridge", "host-local"):
        plugin = tmp_path / "bin" / name
        plugin.write_text("#!/bin/sh\necho '{\"cniVersion\": \"1.0.0\", \"supportedVersions\": [\"1.0.0\"]}'\n")
        plugin.chmod(0o755)
    (tmp_path / "conf" / "10-web.conflist").write_text(json.dumps({"cniVersion": "1.0.0", "name": "cnit-web", "plugins": [
        {"type": "bridge", "bridge": "cnit-br0", "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.9.0.0/24"}]]}}]}))
    gather = f"""
from {PACKAGE} import _info_task

class Host:
    run_command = None
    check_mode = False

    def warn(self, message):
        pass

    def require_libraries(self, *names):
        pass

result = {{}}
_info_task.run(Host(), {{"gather": ["networks"], "cni_path": ["{tmp_path}/bin"], "cache_dir": "{tmp_path}/cache",
                         "conf_dir": "{tmp_path}/conf", "timeout": 20}}, result)
assert [n["valid"] for n in result["networks"]] == [True], result
"""
    first, recalled = loaded_after(gather), loaded_after(gather)
    assert "_validate" in first
    assert not recalled & {"_validate", "_plugin_rules._common", "_plugin_rules.bridge", "_validation.schema"}
