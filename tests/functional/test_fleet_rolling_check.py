# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/fleet.md's roll-out recipe, molecule/fleet/rolling.yml, run the way the doc runs it: on a
host the recipe converged, the new subnet and MTU first with ``--check --diff`` ("what would
change"), which must predict and change nothing instead of failing on the addresses check mode
cannot know (issue 28), then for real.

The machine stands in for one host of the fleet's group, with the fleet's inventory variables,
inside a network and mount namespace of its own: private /run/netns and /etc/cni/net.d, /opt and
/var/lib overlaid on a tmpfs (so /opt/cni/bin, which holds this run's plugin release, and
/var/lib/cni exist there only), so the recipe's bridge, namespaces, routes and files never reach
the machine, and all of it goes with the namespace's one process."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import releases

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "molecule" / "fleet"
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
# The collections directory this run imports the collection from (PYTHONPATH), for ansible-playbook.
COLLECTIONS = Path(importlib.import_module("ansible_collections.cnikit.cni.plugins").__path__[0]).parents[3]
OLD_SUBNET, NEW_SUBNET = "10.251.71.0/24", "10.251.72.0/24"
BRIDGE = "cnit-f-cni0"  # the fleet's network, from its group_vars
# The namespace's one process: it mounts the private directories, says so, and waits to be killed.
HOLD = r"""
set -eu
scratch=$1 plugins=$2
mount -t tmpfs cnit-rolling "$scratch"
for dir in /opt /var/lib; do
    layer="$scratch/$(echo "$dir" | tr / _)"
    mkdir -p "$layer/upper" "$layer/work"
    mount -t overlay cnit-rolling -o "lowerdir=$dir,upperdir=$layer/upper,workdir=$layer/work" "$dir"
done
mkdir -p /opt/cni/bin /var/lib/cni
mount --bind "$plugins" /opt/cni/bin
mount -o remount,bind,ro /opt/cni/bin  # the recipe must not change the release it runs
mount -t tmpfs cnit-rolling /etc/cni/net.d
mount -t tmpfs cnit-rolling /run/netns
ip link set lo up
echo ready
exec sleep infinity
"""


@pytest.fixture
def private_host(tmp_path):
    """A function running a command in the private namespaces."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    holder = subprocess.Popen(["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", HOLD, "hold",
                               str(scratch), releases.PLUGIN_DIR], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready", "the private namespaces could not be set up"

        def run(*argv, env=None):
            return subprocess.run(["nsenter", f"--target={holder.pid}", "--net", "--mount", "--", *argv],
                                  capture_output=True, text=True, env=env, check=False)
        yield run
    finally:
        holder.kill()
        holder.wait()


def _rolling(run, tmp_path, subnet: str, *options):
    inventory = tmp_path / "this-host.yml"
    inventory.write_text(json.dumps({"fleet": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_RETRY_FILES_ENABLED="0")
    return run(ANSIBLE_PLAYBOOK, "-i", str(SCENARIO / "inventory"), "-i", str(inventory), "--limit", "localhost",
               str(SCENARIO / "rolling.yml"), "-e", json.dumps({"fleet_subnet": subnet, "fleet_mtu": 1400}), *options,
               env=env)


def _recap(done) -> dict:
    match = re.search(r"^localhost\s*:\s*(.*)$", done.stdout, re.MULTILINE)
    assert match, done.stdout + done.stderr
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", match.group(1))}


def _bridge_addresses(run) -> str:
    return run("ip", "-4", "-br", "addr", "show", "dev", BRIDGE).stdout


def test_the_documented_check_run_predicts_the_roll_out_and_changes_nothing(private_host, tmp_path):
    converged = _rolling(private_host, tmp_path, OLD_SUBNET)
    assert _recap(converged)["failed"] == 0, converged.stdout[-3000:]
    assert "10.251.71.1/24" in _bridge_addresses(private_host)

    predicted = _rolling(private_host, tmp_path, NEW_SUBNET, "--check", "--diff")
    assert predicted.returncode == 0 and _recap(predicted)["failed"] == 0, predicted.stdout[-3000:]
    assert re.search(r'^\+.*"subnet": "10\.251\.72\.0/24"', predicted.stdout, re.MULTILINE), predicted.stdout
    attach_task = predicted.stdout.split("TASK [Attach the host's namespaces to its network, all in one task]")[1]
    assert re.search(r"^changed: \[localhost\]", attach_task.split("TASK [")[0], re.MULTILINE), predicted.stdout
    # The diff names each attachment the roll-out would replace.
    assert len(re.findall(r"^\+cnit-f-net/\S+/eth0: attached \(replaced\)$", attach_task, re.MULTILINE)) == 3, attach_task
    assert "10.251.71.1/24" in _bridge_addresses(private_host)

    rolled = _rolling(private_host, tmp_path, NEW_SUBNET)
    assert _recap(rolled)["failed"] == 0, rolled.stdout[-3000:]
    assert "10.251.72.1/24" in _bridge_addresses(private_host)
