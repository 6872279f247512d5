# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The routes case's side inside its namespace (run.py starts it with ``ip netns exec``):
cni_route's reconcile of N peers' routes, from empty and converged, timed two ways, in
rounds with the sizes' order rotated round by round:

- in process: ``_route_task.run`` called directly (wall and CPU time of the call);
- the module: ``cni_route.py`` run by a fresh interpreter with its arguments file, as Ansible's
  local connection runs a module (wall time and the child's CPU time, start-up included).

Usage: route_reconcile.py '{"sizes": [10, 100, 1000], "rounds": 3}'. Prints the samples as JSON."""

from __future__ import annotations

import ipaddress
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPLACE = os.path.join(REPO, ".build", "inplace")
sys.path[:0] = [INPLACE, os.path.join(REPO, "tests", "utils")]

from ansible_collections.cnikit.cni.plugins.module_utils import _route_task  # noqa: E402  pylint: disable=wrong-import-position
from stand_in_host import StandInHost  # noqa: E402  pylint: disable=wrong-import-position

MODULE = os.path.join(REPO, "plugins", "modules", "cni_route.py")
# The peers' subnets: /28s of 10.248.128.0/17; their gateways: 10.248.64.2 and up, on-link through
# the namespace's veth, which holds 10.248.64.1/20.
WITHIN = "10.248.128.0/17"
FIRST_GATEWAY = ipaddress.ip_address("10.248.64.2")
FIRST_SUBNET = ipaddress.ip_address("10.248.128.0")


def peer_routes(count: int) -> list:
    return [{"dst": f"{FIRST_SUBNET + 16 * index}/28", "via": str(FIRST_GATEWAY + index), "name": f"peer-{index}"}
            for index in range(count)]


def params(count: int, state: str = "present") -> dict:
    return {"routes": peer_routes(count) if state == "present" else [], "within": [WITHIN], "protocol": 210,
            "table": 254, "state": state, "cni_path": ["/opt/cni/bin"], "conf_dir": "/etc/cni/net.d",
            "cache_dir": "/var/lib/cni", "timeout": 60.0}


def in_process(count: int, state: str = "present") -> tuple:
    """(wall, CPU, result) of one reconcile in this process."""
    result = {}
    wall, cpu = time.perf_counter(), time.process_time()
    _route_task.run(StandInHost(tempfile.gettempdir()), params(count, state), result)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def as_module(count: int, workdir: str) -> tuple:
    """(wall, CPU, result) of the module run by a fresh interpreter."""
    args = os.path.join(workdir, f"args-{count}.json")
    with open(args, "w", encoding="utf-8") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": params(count)}, handle)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run([sys.executable, MODULE, args], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=INPLACE))
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(done.stdout)


def expect(result: dict, count: int, changed: bool) -> None:
    if result.get("failed") or result["changed"] != changed or len(result["routes"]) != count or \
            (changed and len(result["added"]) != count):
        raise RuntimeError(f"unexpected result for {count} routes: {json.dumps(result)[:500]}")


def main() -> None:
    config = json.loads(sys.argv[1])
    sizes, rounds = config["sizes"], config["rounds"]
    samples = {}

    def record(side: str, count: int, wall: float, cpu: float) -> None:
        samples.setdefault(side, {}).setdefault(str(count), {"wall": [], "cpu": []})
        samples[side][str(count)]["wall"].append(wall)
        samples[side][str(count)]["cpu"].append(cpu)

    in_process(1)  # the first call pays the imports; not a sample
    in_process(0, "absent")
    with tempfile.TemporaryDirectory(prefix="cnit-b-routes-") as workdir:
        for round_index in range(rounds):
            shift = round_index % len(sizes)
            for count in sizes[shift:] + sizes[:shift]:
                for side in ("in process", "module"):
                    wall, cpu, result = in_process(count) if side == "in process" else as_module(count, workdir)
                    expect(result, count, changed=True)
                    record(f"{side}, from empty", count, wall, cpu)
                    wall, cpu, result = in_process(count) if side == "in process" else as_module(count, workdir)
                    expect(result, count, changed=False)
                    record(f"{side}, converged", count, wall, cpu)
                    wall, cpu, result = in_process(count, "absent")
                    if len(result["removed"]) != count:
                        raise RuntimeError(f"absent removed {len(result['removed'])} of {count} routes")
                    record("in process, removal", count, wall, cpu)
    print(json.dumps(samples))


if __name__ == "__main__":
    main()
