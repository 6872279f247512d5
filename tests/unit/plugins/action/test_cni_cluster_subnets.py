# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_cluster_subnets as Ansible runs it: the ``ansible`` command with the collection found through
ANSIBLE_COLLECTIONS_PATH, the action plugin validating its options and running the task on the
controller, in check mode (diff, no write), for real, and on bad input. Also its documentation
held to the options the action validates (validate-modules cannot: the module file is docs only)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

from ansible_collections.cnikit.cni.plugins.module_utils import _cluster_subnets_task
from ansible_collections.cnikit.cni.plugins.modules import cni_cluster_subnets

ANSIBLE = pathlib.Path(sys.executable).parent / "ansible"


def _collections_path() -> str:
    """The directory that holds ``ansible_collections`` on the import path of this test (the
    collection may be a symlink into it, so the module's path is not resolved)."""
    here = pathlib.Path(_cluster_subnets_task.__file__)
    return str(next(parent.parent for parent in here.parents if parent.name == "ansible_collections"))


def ansible(tmp_path, args: dict, *options: str) -> tuple:
    """``ansible localhost -m cnikit.cni.cni_cluster_subnets -a <args>``: (rc, result, output)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), ANSIBLE_HOME=str(tmp_path / "ansible-home"))
    done = subprocess.run([str(ANSIBLE), "localhost", "-m", "cnikit.cni.cni_cluster_subnets", "-a", json.dumps(args),
                           *options], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    output = done.stdout
    start = output.index("localhost | ")
    result = json.loads(output[output.index("=>", start) + 2:])
    return done.returncode, result, output


def args_for(path, **members) -> dict:
    return {"path": str(path), "cidr": "10.244.0.0/16", "network": "cluster", "members": members}


def test_check_mode_shows_the_diff_and_writes_nothing_then_the_real_run_writes(tmp_path):
    path = tmp_path / "inventory" / "cni_cluster_subnets.yml"
    path.parent.mkdir()
    args = args_for(path, node1={"address": "192.0.2.11"}, node2={"address": "192.0.2.12 ", "pin": "10.244.7.0/24"})
    rc, result, output = ansible(tmp_path, args, "--check", "--diff")
    assert rc == 0 and result["changed"], output
    assert result["subnets"] == {"node1": "10.244.0.0/24", "node2": "10.244.7.0/24"}
    assert result["addresses"] == {"node1": "192.0.2.11", "node2": "192.0.2.12"}
    assert f"--- before: {path}\n+++ after: {path}\n" in output and "+  node2: 10.244.7.0/24\n" in output
    assert os.listdir(path.parent) == []

    rc, real, output = ansible(tmp_path, args)
    assert rc == 0 and real == result, output
    assert yaml.safe_load(path.read_text())["subnets"] == result["subnets"]

    rc, again, output = ansible(tmp_path, args, "--diff")
    assert rc == 0 and not again["changed"] and "--- before" not in output, output


def test_bad_input_fails_the_task_naming_the_host_and_the_value(tmp_path):
    args = args_for(tmp_path / "s.yml", node1={"address": "192.0.2.11"}, node2={"address": "node2.example"})
    rc, result, output = ansible(tmp_path, args)
    assert rc != 0 and "localhost | FAILED!" in output
    assert result["msg"].startswith("members.node2.address: is not an IP address")
    assert result["error"] == {"path": "members.node2.address", "value": "node2.example"}
    assert not (tmp_path / "s.yml").exists()


def test_options_are_validated_by_ansibles_argument_spec(tmp_path):
    rc, result, _output = ansible(tmp_path, {"path": str(tmp_path / "s.yml"), "cidr": "10.244.0.0/16",
                                             "network": "cluster", "members": {}, "host_prefix": "many"})
    assert rc != 0 and "host_prefix" in result["msg"]


def test_the_documentation_describes_the_options_the_action_validates():
    documented = yaml.safe_load(cni_cluster_subnets.DOCUMENTATION)["options"]
    assert set(documented) == set(_cluster_subnets_task.OPTIONS)
    for name, spec in _cluster_subnets_task.OPTIONS.items():
        assert documented[name]["type"] == spec["type"], name
        assert documented[name].get("required", False) == spec.get("required", False), name
        assert documented[name].get("default") == spec.get("default"), name


@pytest.mark.parametrize("section", ["EXAMPLES", "RETURN"])
def test_the_module_file_is_documentation_only(section):
    assert yaml.safe_load(getattr(cni_cluster_subnets, section))
    assert not hasattr(cni_cluster_subnets, "main")
