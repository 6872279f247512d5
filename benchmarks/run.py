# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cnikit.cni benchmarks: what users feel, against the plugins' own run time and against
what they would do instead. Needs root and Debian's containernetworking-plugins.

Each case measures its sides interleaved in one run (A, B, A, B, ...), so that load from
other users of the machine hits both alike; it reports medians with min and max, and ratios
of samples taken side by side. Writes docs/performance.md and benchmarks/results/<time>.json.

Usage: scripts/benchmark.sh [--quick] [--case NAME ...]   (or .venv/bin/python benchmarks/run.py)"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import subprocess
import time
import typing
import unittest.mock

import harness
import report
from harness import (CNI_PATH, ENGINE_WORK, PYTHON, REPO, WORK, add_namespaces, conflist, paired_ratios,
                     summary)

FULL = {
    "engine_rounds": 12, "engine_cycles_per_round": 20,
    "batch_size": 50, "batch_rounds": 3, "batch_parallel": [1, 2, 4, 8],
    "converged_size": 50, "converged_rounds": 9,
    "validation_per_round": 2000, "validation_rounds": 9,
    "install_rounds": 5,
    "scaling_sizes": [10, 50, 200], "scaling_rounds": 4,
    "import_rounds": 9,
    "fleet_hosts": [1, 2, 4, 8], "fleet_forks": 5, "fleet_namespaces": 10, "fleet_rounds": 5,
    "payload_namespaces": 10, "payload_rounds": 9,
    "attach40_size": 40, "attach40_rounds": 3,
    "routes_sizes": [10, 100, 1000], "routes_rounds": 9,
    "routed_hosts": 4, "routed_rounds": 11,
}
QUICK = {
    "engine_rounds": 2, "engine_cycles_per_round": 5,
    "batch_size": 10, "batch_rounds": 1, "batch_parallel": [1, 4],
    "converged_size": 10, "converged_rounds": 2,
    "validation_per_round": 200, "validation_rounds": 3,
    "install_rounds": 1,
    "scaling_sizes": [5, 10, 20], "scaling_rounds": 1,
    "import_rounds": 2,
    "fleet_hosts": [1, 2], "fleet_forks": 5, "fleet_namespaces": 3, "fleet_rounds": 1,
    "payload_namespaces": 3, "payload_rounds": 2,
    "attach40_size": 10, "attach40_rounds": 1,
    "routes_sizes": [10, 100, 1000], "routes_rounds": 2,
    "routed_hosts": 2, "routed_rounds": 2,
}
ATTACH_NETWORK = "cnit-b-net"
ATTACH_PATHS = {"cni_path": CNI_PATH, "conf_dir": f"{WORK}/conf", "cache_dir": f"{WORK}/cache"}


def timed(func) -> float:
    started = time.perf_counter()
    func()
    return time.perf_counter() - started


# -- 1. engine overhead --------------------------------------------------------------------------

class DirectLoop:
    """The physical floor: the plugin binaries run with the same stdin and environment the
    engine gives them, by the least code that can chain their results."""

    def __init__(self, network, container_id: str, netns: str, ifname: str, timeout: float | None = None):
        self.network = network
        self.timeout = timeout  # analysis only: with a timeout, subprocess polls for the exit
        self.paths = [os.path.join(CNI_PATH[0], p["type"]) for p in network.plugins]
        base = {k: v for k, v in os.environ.items() if not k.startswith("CNI_")}
        self.env = dict(base, CNI_CONTAINERID=container_id, CNI_NETNS=netns, CNI_IFNAME=ifname,
                        CNI_ARGS="", CNI_PATH=os.pathsep.join(CNI_PATH))

    def _call(self, index: int, command: str, prev_result) -> bytes:
        request = dict(self.network.plugins[index], name=self.network.name, cniVersion=self.network.cni_version)
        if prev_result is not None:
            request["prevResult"] = prev_result
        return subprocess.run([self.paths[index]], input=json.dumps(request, sort_keys=True).encode(),
                              env=dict(self.env, CNI_COMMAND=command), capture_output=True, check=True,
                              timeout=self.timeout).stdout

    def add_all(self):
        result = None
        for index in range(len(self.paths)):
            result = json.loads(self._call(index, "ADD", result))
        return result

    def delete_all(self, result) -> None:
        for index in reversed(range(len(self.paths))):
            self._call(index, "DEL", result)

    def cycle(self) -> None:
        self.delete_all(self.add_all())


def case_engine(params: dict) -> dict:
    from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
    from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine

    network = parse_network_list(json.dumps(conflist("cnit-b-engine", "cnit-b-br0", "10.248.0.0/24",
                                                     f"{ENGINE_WORK}/ipam")).encode())
    add_namespaces(["cnit-b-e0"])
    netns = "/var/run/netns/cnit-b-e0"
    engine = Engine(CNI_PATH, f"{ENGINE_WORK}/cache")
    attachment = Attachment(network.name, "cnit-b-engine", netns, "eth0")
    direct = DirectLoop(network, "cnit-b-direct", netns, "eth0")
    direct_with_timeout = DirectLoop(network, "cnit-b-direct", netns, "eth0", timeout=engine.executor.timeout)

    def engine_cycle():
        engine.add(network, attachment)
        engine.delete(network, attachment)

    def engine_cycle_without_fsync():
        """Analysis only: what the cache's durability (fsync) costs per cycle."""
        with unittest.mock.patch("os.fsync"):
            engine_cycle()

    def engine_cycle_tidied():
        """Analysis only: each cycle as a task of its own, which tidies the lock files away."""
        engine_cycle()
        engine.cache.tidy()

    sides = {"engine": engine_cycle, "engine_no_fsync": engine_cycle_without_fsync, "engine_tidy": engine_cycle_tidied,
             "direct_timeout": direct_with_timeout.cycle, "direct": direct.cycle}
    for cycle in list(sides.values()) * 3:  # warm-up: the bridge exists, page cache holds the binaries
        cycle()
    samples = {side: [] for side in sides}  # one per cycle
    totals = {side: [] for side in sides}  # one per round: what a user waits for N cycles
    order = list(sides)
    per_round = params["engine_cycles_per_round"]
    for round_index in range(params["engine_rounds"]):
        for cycle_index in range(round_index * per_round, (round_index + 1) * per_round):
            # Rotated each cycle, so that no side always follows the same one (the kernel finishes
            # some of a DEL's work after the plugin has exited).
            shift = cycle_index % len(order)
            for side in order[shift:] + order[:shift]:
                samples[side].append(timed(sides[side]))
        for side in sides:
            totals[side].append(sum(samples[side][-per_round:]))

    def per_cycle_differences(minuend: str, subtrahend: str) -> dict:
        return summary([(a - b) / per_round for a, b in zip(totals[minuend], totals[subtrahend])])

    ratio = paired_ratios(totals["engine"], totals["direct"])
    return {
        "sides": {side: summary(values) for side, values in samples.items()},
        "ratio": ratio, "ratio_no_fsync": paired_ratios(totals["engine_no_fsync"], totals["direct"]),
        "ratio_timeout": paired_ratios(totals["direct_timeout"], totals["direct"]),
        "ratio_tidy": paired_ratios(totals["engine_tidy"], totals["direct"]),
        "tidy_cost": per_cycle_differences("engine_tidy", "engine"),
        "ratio_per_cycle": paired_ratios(samples["engine"], samples["direct"]),
        "fsync_cost": per_cycle_differences("engine", "engine_no_fsync"),
        "exit_polling_cost": per_cycle_differences("direct_timeout", "direct"),
        "gap": per_cycle_differences("engine", "direct"),
        "target": 1.10, "met": ratio["median"] <= 1.10,
        "rounds": params["engine_rounds"], "cycles_per_round": per_round,
    }


# -- playbook cases: attach many namespaces --------------------------------------------------------

def prepare_attach_network(count: int) -> list:
    """The network file all playbook cases attach to and ``count`` namespaces ``cnit-b-<n>``."""
    os.makedirs(ATTACH_PATHS["conf_dir"], exist_ok=True)
    conf = conflist(ATTACH_NETWORK, "cnit-b-br1", "10.248.4.0/22", f"{WORK}/ipam")
    with open(f"{ATTACH_PATHS['conf_dir']}/10-{ATTACH_NETWORK}.conflist", "w", encoding="utf-8") as out:
        json.dump(conf, out)
    names = [f"cnit-b-{n}" for n in range(count)]
    add_namespaces(names)
    return names


def attach_play(tasks: list) -> list:
    defaults = dict(ATTACH_PATHS, network=ATTACH_NETWORK)
    return [harness.play(tasks, {"cnikit.cni.cni_attach": defaults})]


def batch_task(name: str, names: list, **options) -> dict:
    return {"name": name, "cnikit.cni.cni_attach": dict(options, attachments=[{"netns": n} for n in names])}


def loop_task(name: str, names: list, **options) -> dict:
    return {"name": name, "cnikit.cni.cni_attach": dict(options, netns="{{ item }}"), "loop": names}


def expect_changed(tasks: dict, names: list, count: int) -> None:
    """A timing is only worth reporting if the task did what it claims to measure."""
    for name in names:
        if tasks[name]["changed_items"] != count:
            raise RuntimeError(f"task {name!r} changed {tasks[name]['changed_items']} attachments, expected {count}")


def case_batch(params: dict) -> dict:
    names = prepare_attach_network(params["batch_size"])
    count, sides = len(names), ["loop"] + [f"batch p{p}" for p in params["batch_parallel"]]
    tasks = []
    for r in range(params["batch_rounds"]):
        tasks += [loop_task(f"loop attach r{r}", names), loop_task(f"loop detach r{r}", names, state="absent")]
        for p in params["batch_parallel"]:
            tasks += [batch_task(f"batch p{p} attach r{r}", names, parallel=p),
                      batch_task(f"batch p{p} detach r{r}", names, parallel=p, state="absent")]
    timings, wall = harness.run_playbook("batch", attach_play(tasks))
    expect_changed(timings, [t["name"] for t in tasks], count)
    samples = {side: [timings[f"{side} attach r{r}"]["seconds"] + timings[f"{side} detach r{r}"]["seconds"]
                      for r in range(params["batch_rounds"])] for side in sides}
    default = "batch p4" if "batch p4" in samples else sides[-1]
    ratios = {side: paired_ratios(samples["loop"], samples[side]) for side in sides[1:]}
    return {
        "sides": {side: summary(values) for side, values in samples.items()},
        "ratios": ratios, "ratio": ratios[default], "default_side": default,
        "target": 10.0, "met": ratios[default]["median"] >= 10.0,
        "n": count, "rounds": params["batch_rounds"], "playbook_wall": wall,
    }


def converge_in_process(names: list, run_check: bool) -> None:
    """What the module does for the batch, without Ansible: load the conf dir, converge all."""
    from ansible_collections.cnikit.cni.plugins.module_utils._attach import UNCHANGED, Desired, converge_all
    from ansible_collections.cnikit.cni.plugins.module_utils._conflist import load_conf_dir
    from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
    from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import cnitool_container_id, netns_path

    network = load_conf_dir(ATTACH_PATHS["conf_dir"]).find(ATTACH_NETWORK)
    desired = []
    for name in names:
        path = netns_path(name)
        desired.append(Desired(lambda: network, Attachment(ATTACH_NETWORK, cnitool_container_id(path), path),
                               "present", run_check))
    outcomes = converge_all(Engine(CNI_PATH, ATTACH_PATHS["cache_dir"]), desired)
    if any(getattr(o, "action", None) != UNCHANGED for o in outcomes):
        raise RuntimeError(f"in-process re-run was not a no-op: {outcomes[:3]}")


def case_converged(params: dict) -> dict:
    names = prepare_attach_network(params["converged_size"])
    rounds = params["converged_rounds"]
    timings, _wall = harness.run_playbook("converged-setup", attach_play([batch_task("setup attach", names)]))
    expect_changed(timings, ["setup attach"], len(names))
    in_process = {"in-process check": [], "in-process nocheck": []}
    for _round in range(rounds):
        in_process["in-process check"].append(timed(lambda: converge_in_process(names, True)))
        in_process["in-process nocheck"].append(timed(lambda: converge_in_process(names, False)))
    tasks = []
    for r in range(rounds):
        tasks += [batch_task(f"check r{r}", names, run_check=True),
                  batch_task(f"nocheck r{r}", names, run_check=False),
                  {"name": f"ping r{r}", "ansible.builtin.ping": {}}]
    tasks.append(batch_task("teardown detach", names, state="absent"))
    timings, wall = harness.run_playbook("converged", attach_play(tasks))
    expect_changed(timings, ["teardown detach"], len(names))
    expect_changed(timings, [t["name"] for t in tasks[:-1]], 0)
    samples = {side: [timings[f"{side} r{r}"]["seconds"] for r in range(rounds)]
               for side in ("check", "nocheck", "ping")}
    sides = {side: summary(values) for side, values in samples.items()}
    return {
        "sides": sides, "in_process": {side: summary(values) for side, values in in_process.items()},
        "ratio": paired_ratios(samples["check"], samples["nocheck"]),
        "ratio_nocheck_ping": paired_ratios(samples["nocheck"], samples["ping"]),
        "target": 1.5, "met": sides["check"]["median"] <= 1.5 and sides["nocheck"]["median"] <= 1.5,
        "n": len(names), "rounds": rounds, "playbook_wall": wall,
    }


def case_scaling(params: dict) -> dict:
    sizes, rounds = params["scaling_sizes"], params["scaling_rounds"]
    names = prepare_attach_network(max(sizes))
    tasks = []
    for r in range(rounds):
        for size in sizes:
            tasks += [batch_task(f"{size} attach r{r}", names[:size]),
                      batch_task(f"{size} detach r{r}", names[:size], state="absent")]
    timings, wall = harness.run_playbook("scaling", attach_play(tasks))
    for size in sizes:
        expect_changed(timings, [f"{size} {verb} r{r}" for verb in ("attach", "detach") for r in range(rounds)], size)
    per_item = {size: [(timings[f"{size} attach r{r}"]["seconds"] + timings[f"{size} detach r{r}"]["seconds"]) / size
                       for r in range(rounds)] for size in sizes}
    mid, big = sizes[1], sizes[-1]
    growth = paired_ratios(per_item[big], per_item[mid])
    marginal = {f"{small} to {large}": [(per_item[large][r] * large - per_item[small][r] * small) / (large - small)
                                        for r in range(rounds)]
                for small, large in zip(sizes, sizes[1:])}
    return {
        "sides": {f"{size} attachments": summary(values) for size, values in per_item.items()},
        "marginal": {span: summary(values) for span, values in marginal.items()},
        "ratio": growth, "ratio_label": f"Per attachment at {big} / at {mid}",
        "target": 1.20, "met": growth["median"] <= 1.20,
        "rounds": rounds, "playbook_wall": wall,
    }


# -- 4. validation ---------------------------------------------------------------------------------

VALIDATION_LIST = {
    "cniVersion": "1.0.0", "name": "cnit-b-valid",
    "plugins": [
        {"type": "bridge", "bridge": "cnit-b-br9", "isGateway": True, "ipMasq": True,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.248.9.0/24", "gateway": "10.248.9.1"}]],
                  "routes": [{"dst": "0.0.0.0/0"}]}},
        {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True},
    ],
}
COLD_VALIDATION = """
import json, sys, time
started = time.perf_counter()
from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_text
validate_text(sys.argv[1])
print(time.perf_counter() - started)
"""


def case_validation(params: dict) -> dict:
    from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_text

    text = json.dumps(VALIDATION_LIST)
    _data, first = validate_text(text)  # compiles the schemas
    if not first.ok:
        raise RuntimeError(f"the validation case's conflist is not valid: {first.summary()}")
    per_round, rates, colds = params["validation_per_round"], [], []
    env = dict(os.environ, PYTHONPATH=harness.INPLACE)
    for _round in range(params["validation_rounds"]):
        seconds = timed(lambda: [validate_text(text) for _item in range(per_round)])
        rates.append(per_round / seconds)
        cold = subprocess.run([PYTHON, "-c", COLD_VALIDATION, text], env=env, capture_output=True, text=True, check=True)
        colds.append(float(cold.stdout))
    rate = summary(rates)
    return {
        "sides": {"validations per second (warm)": rate, "first validation in a new process, s": summary(colds)},
        "target": 2000, "met": rate["median"] >= 2000, "n": per_round, "rounds": params["validation_rounds"],
    }


# -- 5. install re-run -----------------------------------------------------------------------------

RELEASE = "1.1.1"


def machine_arch() -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def bytes_during(requests: list, task: dict) -> tuple:
    served = [r for r in requests if task["start"] <= r["time"] <= task["end"]]
    return sum(r["bytes"] for r in served), len(served)


def noop_breakdown(dest: str, rounds: int) -> dict:
    """What a no-op re-run spends on the managed node besides Ansible, timed in process on the
    installed binaries: the manifest check's digests, and the VERSION calls behind the returned
    ``cni_versions``."""
    from ansible_collections.cnikit.cni.plugins.module_utils._exec import VERSION_PROBE_STDIN, plugin_env, run_plugin
    from ansible_collections.cnikit.cni.plugins.module_utils._download import file_digests

    binaries = [os.path.join(dest, name) for name in sorted(os.listdir(dest)) if not name.startswith(".")]
    env = plugin_env("VERSION", ["dummy"], netns="dummy", ifname="dummy")

    def sha256_only(path):
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()

    parts = {
        f"sha256 + sha512 of the {len(binaries)} binaries (the manifest check)": lambda: [file_digests(p) for p in binaries],
        "sha256 alone (the only digest the check compares)": lambda: [sha256_only(p) for p in binaries],
        f"VERSION of the {len(binaries)} binaries (the returned cni_versions)":
            lambda: [run_plugin(p, env, VERSION_PROBE_STDIN) for p in binaries],
    }
    samples = {label: [] for label in parts}
    for _round in range(rounds):
        for label, work in parts.items():
            samples[label].append(timed(work))
    return {label: summary(values) for label, values in samples.items()}


def case_install(params: dict) -> dict:
    root = f"{WORK}/release"
    harness.release_server.build_release(root, RELEASE, machine_arch())
    server, url, requests = harness.start_counting_server(root)
    try:
        options = {"version": RELEASE, "arch": machine_arch(), "base_url": url, "dest": f"{WORK}/install/bin"}
        tasks = [{"name": "first install", "cnikit.cni.cni_plugin_install": options}]
        for r in range(params["install_rounds"]):
            tasks += [{"name": f"noop r{r}", "cnikit.cni.cni_plugin_install": options},
                      {"name": f"force r{r}", "cnikit.cni.cni_plugin_install": dict(options, force=True)}]
        timings, wall = harness.run_playbook("install", [harness.play(tasks)])
    finally:
        server.shutdown()
    rounds = range(params["install_rounds"])
    noop = [timings[f"noop r{r}"] for r in rounds]
    force = [timings[f"force r{r}"] for r in rounds]
    noop_bytes = [bytes_during(requests, t) for t in noop]
    unchanged = not any(t["changed"] for t in noop)
    downloaded_nothing = all(b == (0, 0) for b in noop_bytes)
    return {
        "sides": {"no-op re-run": summary([t["seconds"] for t in noop]),
                  "forced re-install": summary([t["seconds"] for t in force])},
        "ratio": paired_ratios([t["seconds"] for t in force], [t["seconds"] for t in noop]),
        "first_install": {"seconds": timings["first install"]["seconds"],
                          "bytes": bytes_during(requests, timings["first install"])[0]},
        "noop_bytes": sum(size for size, _count in noop_bytes),
        "noop_requests": sum(count for _size, count in noop_bytes),
        "noop_changed": not unchanged,
        "noop_breakdown": noop_breakdown(options["dest"], max(params["install_rounds"], 3)),
        "met": downloaded_nothing and unchanged, "rounds": params["install_rounds"], "playbook_wall": wall,
    }


# -- import cost on the managed node ---------------------------------------------------------------

IMPORT_PROBE = """
import json, sys, time
started = time.perf_counter()
import ansible.module_utils.basic
basic = time.perf_counter()
__import__(sys.argv[1])
print(json.dumps({"basic": basic - started, "own": time.perf_counter() - basic,
                  "heavy": sorted(m for m in ("pyroute2", "jsonschema") if m in sys.modules)}))
"""
COLLECTION = "ansible_collections.cnikit.cni.plugins"


def import_targets() -> list:
    modules = sorted(f[:-3] for f in os.listdir(f"{REPO}/plugins/modules") if f.endswith(".py"))
    return ["pyroute2", "jsonschema"] + [f"{COLLECTION}.modules.{m}" for m in modules]


def case_imports(params: dict) -> dict:
    """Each target imported in a fresh interpreter after ``ansible.module_utils.basic``, which
    every module imports first; the two are timed apart."""
    env = dict(os.environ, PYTHONPATH=harness.INPLACE)
    targets, basic, own, heavy = import_targets(), [], {}, {}
    for _round in range(params["import_rounds"]):
        for target in targets:
            probe = subprocess.run([PYTHON, "-c", IMPORT_PROBE, target], env=env, capture_output=True, text=True,
                                   check=True)
            answer = json.loads(probe.stdout)
            basic.append(answer["basic"])
            own.setdefault(target, []).append(answer["own"])
            heavy[target] = answer["heavy"]
    return {"basic": summary(basic), "sides": {t: summary(s) for t, s in own.items()}, "heavy": heavy,
            "rounds": params["import_rounds"]}


# -- the payload's own run: each converged task's AnsiballZ payload against ping's -------------------

PAYLOAD_NETNS = "cnit-b-payload"  # the case's tasks and payloads run in this namespace, never the machine's
PAYLOAD_WORK = f"{WORK}/payload"
PAYLOAD_NETWORK = "cnit-b-pnet"
PAYLOAD_PATHS = {"cni_path": [f"{PAYLOAD_WORK}/bin"], "conf_dir": f"{PAYLOAD_WORK}/conf", "cache_dir": f"{PAYLOAD_WORK}/cache"}
PAYLOAD_DEFAULTS = {f"cnikit.cni.{module}": PAYLOAD_PATHS for module in ("cni_network", "cni_attach", "cni_info")}
# The routed network's member on a veth pair inside the namespace (10.248.80.1/24 on one end): its
# chains and forwarding, and a route to a peer's subnet through a gateway on that link.
PAYLOAD_LINK = ("cnit-b-pd0", "cnit-b-pd1", "10.248.80.1/24")
PAYLOAD_MEMBER = {"network": "cnit-b-routed", "cidr": "10.248.96.0/20", "subnet": "10.248.97.0/24", "masquerade": True,
                  "cache_dir": PAYLOAD_PATHS["cache_dir"]}
PAYLOAD_ROUTES = {"routes": [{"dst": "10.248.98.0/24", "via": "10.248.80.2", "name": "peer-1"}],
                  "within": ["10.248.96.0/20"]}


def payload_tasks(namespaces: list) -> list:
    """ping and every converged task of the collection, each a module of its own (the AnsiballZ
    payload is kept under the module's name)."""
    plugins = conflist(PAYLOAD_NETWORK, "cnit-b-br20", "10.248.20.0/24", f"{PAYLOAD_WORK}/ipam")["plugins"]
    return [
        {"name": "ping", "ansible.builtin.ping": {}},
        {"name": "cni_plugin_install", "cnikit.cni.cni_plugin_install": {
            "src_dir": "/usr/lib/cni", "dest": PAYLOAD_PATHS["cni_path"][0], "plugins": ["bridge", "host-local", "tuning"]}},
        {"name": "cni_network", "cnikit.cni.cni_network": {"name": PAYLOAD_NETWORK, "plugins": plugins}},
        {"name": "cni_attach", "cnikit.cni.cni_attach": {"network": PAYLOAD_NETWORK, "create_netns": True,
                                                         "attachments": [{"netns": n} for n in namespaces]}},
        {"name": "cni_info", "cnikit.cni.cni_info": {}},  # every subset, as a task without options gathers
        {"name": "cni_cluster_member", "cnikit.cni.cni_cluster_member": PAYLOAD_MEMBER},
        {"name": "cni_route", "cnikit.cni.cni_route": PAYLOAD_ROUTES},
    ]


PAYLOAD_TASKS = ("ping", "cni_plugin_install", "cni_network", "cni_attach", "cni_info", "cni_cluster_member", "cni_route")


def kept_payloads(remote_tmp: str) -> dict:
    """{module name: path} of the AnsiballZ payloads Ansible left in ``remote_tmp``."""
    found = {}
    for directory in os.listdir(remote_tmp):
        for name in os.listdir(os.path.join(remote_tmp, directory)):
            if name.startswith("AnsiballZ_") and name.endswith(".py"):
                found[name[len("AnsiballZ_"):-3]] = os.path.join(remote_tmp, directory, name)
    return found


# A payload runs in the environment of a managed node reached over SSH, which does not have the
# PYTHONDONTWRITEBYTECODE=1 of this machine's shells: with it, the collection's modules keep no
# compiled module_utils (plugins/module_utils/_bytecode.py) and every run compiles them again.
PAYLOAD_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def run_payload(path: str) -> tuple:
    """(wall seconds, CPU seconds) of one run of a kept payload in the case's namespace, which
    must change nothing."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run = subprocess.run(["ip", "netns", "exec", PAYLOAD_NETNS, PYTHON, path], capture_output=True, text=True,
                         check=False, cwd=os.path.dirname(path), env=PAYLOAD_ENV)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(run.stdout) if run.returncode == 0 and run.stdout.strip() else {"failed": True, "msg": run.stderr}
    if result.get("failed") or result.get("changed"):
        raise RuntimeError(f"payload {path} did not converge: {json.dumps(result)[:500]}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


# Runs a kept payload as the case does and writes to stderr the CPU seconds of the payload's own
# process and of the processes it waited for (the plugin binaries), apart.
PAYLOAD_SPLIT = """
import resource, runpy, sys
path = sys.argv[1]
sys.argv = [path]
try:
    runpy.run_path(path, run_name="__main__")
except SystemExit:
    pass
own, plugins = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write("payload-split %f %f\\n" % (own.ru_utime + own.ru_stime, plugins.ru_utime + plugins.ru_stime))
"""


def payload_split(path: str) -> tuple:
    """(CPU seconds of the payload's own process, of the processes it ran) of one run."""
    run = subprocess.run(["ip", "netns", "exec", PAYLOAD_NETNS, PYTHON, "-c", PAYLOAD_SPLIT, path], capture_output=True,
                         text=True, check=True, cwd=os.path.dirname(path), env=PAYLOAD_ENV)
    own, children = next(line for line in run.stderr.splitlines() if line.startswith("payload-split ")).split()[1:]
    return float(own), float(children)


def case_payload(params: dict) -> dict:
    """Each converged task's AnsiballZ payload, kept with ANSIBLE_KEEP_REMOTE_FILES=1 and run alone
    with the managed node's Python, against ping's payload: wall and CPU time, rounds rotated."""
    namespaces = [f"cnit-b-p{n}" for n in range(params["payload_namespaces"])]
    remote_tmp = f"{PAYLOAD_WORK}/remote"
    os.makedirs(remote_tmp)
    subprocess.run(["ip", "netns", "add", PAYLOAD_NETNS], check=True)
    try:
        link, peer, address = PAYLOAD_LINK
        for argv in (["link", "add", link, "type", "veth", "peer", "name", peer], ["addr", "add", address, "dev", link],
                     ["link", "set", link, "up"], ["link", "set", peer, "up"], ["link", "set", "lo", "up"]):
            subprocess.run(["ip", "-n", PAYLOAD_NETNS, *argv], check=True)
        # Made here, not by the task: a namespace mounted under ip netns exec lives in that command's
        # private mount namespace and is gone when it exits, so every later run would make it anew.
        add_namespaces(namespaces)
        in_netns = ("ip", "netns", "exec", PAYLOAD_NETNS)
        timings, _wall = harness.run_playbook("payload-provision", [harness.play(payload_tasks(namespaces), PAYLOAD_DEFAULTS)],
                                              wrapper=in_netns)
        expect_changed(timings, ["cni_attach"], len(namespaces))
        timings, _wall = harness.run_playbook(
            "payload-kept", [harness.play(payload_tasks(namespaces), PAYLOAD_DEFAULTS)], wrapper=in_netns,
            extra_env={"ANSIBLE_KEEP_REMOTE_FILES": "1", "ANSIBLE_REMOTE_TEMP": remote_tmp, "ANSIBLE_PIPELINING": "0"})
        expect_changed(timings, list(timings), 0)
        payloads = kept_payloads(remote_tmp)
        for path in payloads.values():  # warm-up: the page cache holds the interpreter and the binaries
            run_payload(path)
        samples = {task: {"wall": [], "cpu": []} for task in PAYLOAD_TASKS}
        for r in range(params["payload_rounds"]):
            shift = r % len(PAYLOAD_TASKS)
            for task in PAYLOAD_TASKS[shift:] + PAYLOAD_TASKS[:shift]:
                wall, cpu = run_payload(payloads[task])
                samples[task]["wall"].append(wall)
                samples[task]["cpu"].append(cpu)
        sizes = {task: os.path.getsize(payloads[task]) for task in PAYLOAD_TASKS}
        # cni_attach's CHECK runs plugin binaries: their share apart from the payload's own process.
        splits = [payload_split(payloads["cni_attach"]) for _round in range(params["payload_rounds"])]
    finally:
        subprocess.run(["ip", "netns", "del", PAYLOAD_NETNS], check=False)
    ratios = {measure: {task: paired_ratios(samples[task][measure], samples["ping"][measure])
                        for task in PAYLOAD_TASKS if task != "ping"} for measure in ("cpu", "wall")}
    worst = max(r["median"] for r in ratios["cpu"].values())
    return {
        "sides": {task: {m: summary(v) for m, v in values.items()} for task, values in samples.items()},
        "ratios": ratios, "sizes": sizes, "namespaces": len(namespaces), "rounds": params["payload_rounds"],
        "attach_split": {"own": summary([own for own, _plugins in splits]),
                         "plugins": summary([plugins for _own, plugins in splits])},
        "target": 1.25, "worst": worst, "worst_wall": max(r["median"] for r in ratios["wall"].values()),
        "met": worst <= 1.25,
    }


# -- 7. a fleet over SSH ---------------------------------------------------------------------------

class SimulatedFleet(typing.NamedTuple):
    """Hosts of tests/utils/fleet.py for a case: <stem>-1 ... at <subnet>.11 ..., in ``group``."""
    work: str
    prefix: str
    subnet: str  # the controller's test bridge
    stem: str
    group: str


FLEET_HOSTS = SimulatedFleet("/tmp/cnit-fb-fleet", "cnit-fb-", "10.199.1", "fb", "fleet")
FLEET_NETWORK = "cnit-b-fleet"  # each host's own bridge uses 10.248.16.0/24


def fleet_inventory(fleet: SimulatedFleet, count: int, group_vars: dict | None = None) -> str:
    """An inventory of ``count`` hosts reached over SSH as root, with the venv's Python."""
    ssh_args = (f"-F /dev/null -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes "
                f"-o UserKnownHostsFile={fleet.work}/known_hosts")
    hosts = {f"{fleet.stem}-{n}": {"ansible_host": f"{fleet.subnet}.{10 + n}"} for n in range(1, count + 1)}
    inventory = {fleet.group: {"hosts": hosts, "vars": dict(
        group_vars or {}, ansible_user="root", ansible_ssh_private_key_file=f"{fleet.work}/id_ed25519",
        ansible_ssh_common_args=ssh_args, ansible_control_path_dir=f"{fleet.work}/cp",
        ansible_pipelining=True, ansible_python_interpreter=PYTHON)}}
    path = os.path.join(WORK, f"{fleet.stem}-inventory.yml")
    with open(path, "w", encoding="utf-8") as out:
        json.dump(inventory, out)
    return path


def fleet_args(fleet: SimulatedFleet, count: int):
    return argparse.Namespace(work=fleet.work, prefix=fleet.prefix, subnet=fleet.subnet,
                              hosts=[f"{fleet.stem}-{n}={10 + n}" for n in range(1, count + 1)])


FLEET_DEFAULTS = {group: {"cni_path": ["/opt/cni/bin"]} for group in
                  ("cnikit.cni.cni_network", "cnikit.cni.cni_attach", "cnikit.cni.cni_info")}


FLEET_INSTALL = {"src_dir": "/usr/lib/cni", "dest": "/opt/cni/bin", "plugins": ["bridge", "host-local", "loopback", "tuning"]}
# A routed network's member on each host (inside the host's namespaces): its record, chains and
# forwarding, and a route to a peer's subnet through the controller's end of the test bridge.
FLEET_MEMBER = {"network": "cnit-b-routed", "cidr": "10.248.96.0/20", "subnet": "10.248.97.0/24", "masquerade": True}
FLEET_ROUTES = {"routes": [{"dst": "10.248.98.0/24", "via": f"{FLEET_HOSTS.subnet}.1", "name": "peer-1"}],
                "within": ["10.248.96.0/20"]}


def fleet_provision(namespaces: list) -> list:
    conf = conflist(FLEET_NETWORK, "cnit-b-br16", "10.248.16.0/24", "/var/lib/cni/networks")
    return [
        {"name": "install", "cnikit.cni.cni_plugin_install": FLEET_INSTALL},
        {"name": "network", "cnikit.cni.cni_network": {"name": FLEET_NETWORK, "plugins": conf["plugins"]}},
        {"name": "attach", "cnikit.cni.cni_attach": {"network": FLEET_NETWORK, "create_netns": True,
                                                     "attachments": [{"netns": n} for n in namespaces]}},
        {"name": "member", "cnikit.cni.cni_cluster_member": FLEET_MEMBER},
        {"name": "route", "cnikit.cni.cni_route": FLEET_ROUTES},
    ]


def fleet_round(r: int, namespaces: list, conf_plugins: list, prefix: str = "") -> list:
    """One round of converged tasks, each of which must change nothing, and Ansible's ping."""
    attachments = [{"netns": n} for n in namespaces]
    return [
        {"name": f"{prefix}ping r{r}", "ansible.builtin.ping": {}},
        {"name": f"{prefix}cni_plugin_install r{r}", "cnikit.cni.cni_plugin_install": FLEET_INSTALL},
        {"name": f"{prefix}cni_network r{r}", "cnikit.cni.cni_network": {"name": FLEET_NETWORK, "plugins": conf_plugins}},
        {"name": f"{prefix}cni_attach r{r}", "cnikit.cni.cni_attach": {"network": FLEET_NETWORK, "attachments": attachments}},
        {"name": f"{prefix}cni_attach nocheck r{r}", "cnikit.cni.cni_attach": {
            "network": FLEET_NETWORK, "attachments": attachments, "run_check": False}},
        {"name": f"{prefix}cni_info r{r}", "cnikit.cni.cni_info": {}},
        {"name": f"{prefix}cni_cluster_member r{r}", "cnikit.cni.cni_cluster_member": FLEET_MEMBER},
        {"name": f"{prefix}cni_route r{r}", "cnikit.cni.cni_route": FLEET_ROUTES},
    ]


FLEET_TASKS = ("ping", "cni_plugin_install", "cni_network", "cni_attach", "cni_attach nocheck", "cni_info",
               "cni_cluster_member", "cni_route")


def fleet_cpu(inventory: str, namespaces: list, plugins: list, rounds: int) -> dict:
    """CPU seconds the first host spends on each converged task: one playbook of that task alone
    per task and round (the host's every process, ``harness.hosts_cpu_seconds``: sshd, the shell
    and the module), tasks rotated each round."""
    host_pids = [harness.fleet.read_state(FLEET_HOSTS.work)["hosts"][0]["pid"]]
    samples = {task: [] for task in FLEET_TASKS}
    for r in range(rounds):
        tasks = {t["name"].rsplit(" r", 1)[0]: t for t in fleet_round(r, namespaces, plugins)}
        shift = r % len(FLEET_TASKS)
        for task in FLEET_TASKS[shift:] + FLEET_TASKS[:shift]:
            cost = harness.run_playbook_costed(f"fleet-cpu-{r}", [harness.play([tasks[task]], FLEET_DEFAULTS, "fleet[0]")],
                                               inventory, 1, host_pids, f"{FLEET_HOSTS.work}/cp")
            expect_changed(cost["tasks"], list(cost["tasks"]), 0)
            samples[task].append(cost["hosts_cpu"])
    return samples


def case_fleet(params: dict) -> dict:
    """Converged tasks on simulated SSH hosts (tests/utils/fleet.py): per task against ping on the
    same hosts, on one host and on all, and the wall time as hosts grow at fixed forks."""
    counts, forks, rounds = params["fleet_hosts"], params["fleet_forks"], params["fleet_rounds"]
    namespaces = [f"cnit-b-f{n}" for n in range(params["fleet_namespaces"])]
    plugins = conflist(FLEET_NETWORK, "cnit-b-br16", "10.248.16.0/24", "/var/lib/cni/networks")["plugins"]
    try:
        built = harness.fleet.up(fleet_args(FLEET_HOSTS, max(counts)))
        inventory = fleet_inventory(FLEET_HOSTS, max(counts))
        timings, _wall = harness.run_playbook("fleet-provision", [harness.play(
            fleet_provision(namespaces), FLEET_DEFAULTS, "fleet")], inventory, max(counts))
        expect_changed(timings, ["attach"], len(namespaces))
        # Per task, on one host and on all hosts at once (forks = hosts): rounds interleaved.
        plays = []
        for r in range(rounds):
            plays.append(harness.play(fleet_round(r, namespaces, plugins, "one "), FLEET_DEFAULTS, "fleet[0]"))
            plays.append(harness.play(fleet_round(r, namespaces, plugins, "all "), FLEET_DEFAULTS, "fleet"))
        timings, _wall = harness.run_playbook("fleet-converged", plays, inventory, max(counts))
        expect_changed(timings, list(timings), 0)
        per_task = {scope: {task: [timings[f"{scope} {task} r{r}"]["seconds"] for r in range(rounds)]
                            for task in FLEET_TASKS} for scope in ("one", "all")}
        # Hosts growing at fixed forks: a converged cni_attach and a ping on the first k hosts.
        plays = [harness.play([t for t in fleet_round(r, namespaces, plugins, f"{k} hosts ")
                               if t["name"].split(" ", 2)[2].startswith(("ping", "cni_attach r"))],
                              FLEET_DEFAULTS, f"fleet[0:{k - 1}]")
                 for r in range(rounds) for k in counts]
        timings, _wall = harness.run_playbook("fleet-scaling", plays, inventory, forks)
        expect_changed(timings, list(timings), 0)
        growth = {task: {str(k): summary([timings[f"{k} hosts {task} r{r}"]["seconds"] for r in range(rounds)])
                         for k in counts} for task in ("ping", "cni_attach")}
        cpu = fleet_cpu(inventory, namespaces, plugins, rounds)
    finally:
        harness.fleet.down(fleet_args(FLEET_HOSTS, max(counts)))
    ratios = {scope: {task: paired_ratios(per_task[scope][task], per_task[scope]["ping"])
                      for task in FLEET_TASKS if task != "ping"} for scope in per_task}
    ratios["cpu"] = {task: paired_ratios(cpu[task], cpu["ping"]) for task in FLEET_TASKS if task != "ping"}
    worst = max(r["median"] for r in ratios["one"].values())
    worst_cpu = max(r["median"] for r in ratios["cpu"].values())
    return {
        "per_task": {scope: {task: summary(v) for task, v in tasks.items()} for scope, tasks in per_task.items()},
        "cpu": {task: summary(v) for task, v in cpu.items()},
        "ratios": ratios, "growth": growth, "hosts": max(counts), "counts": counts, "forks": forks,
        "namespaces": len(namespaces), "rounds": rounds, "build_seconds": built.get("seconds"),
        "target": 1.25, "met": worst <= 1.25 and worst_cpu <= 1.25, "worst": worst, "worst_cpu": worst_cpu,
    }


# -- 8. 40 namespaces: batched tasks against the plugins in a plain loop ------------------------------

def in_process_batch(names: list, state: str, parallel: int) -> None:
    """What the module does for the batch, without Ansible (conf dir load, converge_all)."""
    from ansible_collections.cnikit.cni.plugins.module_utils._attach import Desired, converge_all
    from ansible_collections.cnikit.cni.plugins.module_utils._conflist import load_conf_dir
    from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
    from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import cnitool_container_id, netns_path

    network = load_conf_dir(ATTACH_PATHS["conf_dir"]).find(ATTACH_NETWORK)
    desired = [Desired(lambda: network, Attachment(ATTACH_NETWORK, cnitool_container_id(netns_path(n)), netns_path(n)),
                       state, True) for n in names]
    outcomes = converge_all(Engine(CNI_PATH, ATTACH_PATHS["cache_dir"]), desired, False, parallel)
    failed = [o for o in outcomes if not hasattr(o, "action")]
    if failed:
        raise RuntimeError(f"in-process {state} failed: {failed[0]}")


def case_attach40(params: dict) -> dict:
    """Two batched cni_attach tasks (attach, then detach N namespaces) against the same plugins
    run by a plain sequential loop, with the module's own work in process and Ansible's ping as
    the parts between them."""
    from ansible_collections.cnikit.cni.plugins.module_utils._conflist import load_conf_dir

    names = prepare_attach_network(params["attach40_size"])
    network = load_conf_dir(ATTACH_PATHS["conf_dir"]).find(ATTACH_NETWORK)
    loops = [DirectLoop(network, f"cnit-b-plain-{n}", f"/var/run/netns/{n}", "eth0") for n in names]

    def plain_loop():
        results = [loop.add_all() for loop in loops]
        for loop, result in zip(loops, results):
            loop.delete_all(result)

    samples = {side: [] for side in ("tasks", "ping x2", "plain loop", "in process p4", "in process p1")}
    for r in range(params["attach40_rounds"]):
        tasks = [batch_task(f"attach r{r}", names), batch_task(f"detach r{r}", names, state="absent"),
                 {"name": f"ping a r{r}", "ansible.builtin.ping": {}}, {"name": f"ping b r{r}", "ansible.builtin.ping": {}}]
        timings, _wall = harness.run_playbook(f"attach40-r{r}", attach_play(tasks))
        expect_changed(timings, [f"attach r{r}", f"detach r{r}"], len(names))
        samples["tasks"].append(timings[f"attach r{r}"]["seconds"] + timings[f"detach r{r}"]["seconds"])
        samples["ping x2"].append(timings[f"ping a r{r}"]["seconds"] + timings[f"ping b r{r}"]["seconds"])
        samples["plain loop"].append(timed(plain_loop))
        for parallel in (4, 1):
            samples[f"in process p{parallel}"].append(timed(lambda p=parallel: (
                in_process_batch(names, "present", p), in_process_batch(names, "absent", p))))
    ratio = paired_ratios(samples["tasks"], samples["plain loop"])
    return {
        "sides": {side: summary(values) for side, values in samples.items()},
        "ratio": ratio, "ratio_in_process": paired_ratios(samples["in process p4"], samples["plain loop"]),
        "ratio_p1": paired_ratios(samples["in process p1"], samples["plain loop"]),
        # Issue 22's measure: what the tasks cost beyond Ansible's floor against the plain loop, ≤ 1.
        "ratio_beyond_floor": paired_ratios([t - p for t, p in zip(samples["tasks"], samples["ping x2"])],
                                            samples["plain loop"]),
        "overhead": summary([t - i for t, i in zip(samples["tasks"], samples["in process p4"])]),
        "target": 1.5, "met": ratio["median"] <= 1.5, "n": len(names), "rounds": params["attach40_rounds"],
    }


# -- 9. routes -------------------------------------------------------------------------------------

ROUTES_NETNS = "cnit-b-routes"


def case_routes(params: dict) -> dict:
    """cni_route reconciling N peers' routes in a namespace of its own (benchmarks/route_reconcile.py
    runs inside it): from empty and converged, in process and as a module process."""
    sizes, rounds = params["routes_sizes"], params["routes_rounds"]
    ip = ["ip", "-n", ROUTES_NETNS]
    subprocess.run(["ip", "netns", "add", ROUTES_NETNS], check=True)
    try:
        for argv in (["link", "add", "cnit-b-rt0", "type", "veth", "peer", "name", "cnit-b-rt1"],
                     ["link", "set", "cnit-b-rt0", "up"], ["link", "set", "cnit-b-rt1", "up"],
                     ["addr", "add", "10.248.64.1/20", "dev", "cnit-b-rt0"]):
            subprocess.run(ip + argv, check=True)
        driver = subprocess.run(["ip", "netns", "exec", ROUTES_NETNS, PYTHON, os.path.join(REPO, "benchmarks",
                                 "route_reconcile.py"), json.dumps({"sizes": sizes, "rounds": rounds})],
                                capture_output=True, text=True, check=False)
    finally:
        subprocess.run(["ip", "netns", "del", ROUTES_NETNS], check=False)
    if driver.returncode:
        raise RuntimeError(f"route_reconcile.py failed: {driver.stderr[-800:]}")
    samples = json.loads(driver.stdout)
    sides = {f"{side}, {count} routes": {"wall": summary(values["wall"]), "cpu": summary(values["cpu"])}
             for side, by_count in samples.items() for count, values in by_count.items()}
    small, big = str(sizes[-2]), str(sizes[-1])
    from_empty = samples["in process, from empty"]
    # CPU time, not wall: on a loaded machine a run's wall time includes its waits for a core.
    growth = paired_ratios([t / int(big) for t in from_empty[big]["cpu"]],
                           [t / int(small) for t in from_empty[small]["cpu"]])
    reconcile_big = summary(from_empty[big]["wall"])
    return {
        "sides": sides, "sizes": sizes, "rounds": rounds,
        "ratio": growth, "ratio_label": f"CPU time per route, in process from empty, at {big} / at {small}",
        "reconcile_big": reconcile_big, "module_big": summary(samples["module, from empty"][big]["wall"]),
        "target": 1.0, "growth_target": 1.2,
        "met": reconcile_big["median"] < 1.0 and growth["median"] <= 1.2,
    }


# -- 10. the routed network role against ping ---------------------------------------------------------

ROUTED_HOSTS = SimulatedFleet("/tmp/cnit-rb-fleet", "cnit-rb-", "10.199.2", "rb", "cni_cluster")
ROUTED_SIDES = ("role", "ping", "empty")


def routed_vars() -> dict:
    return {"cni_cluster_cidr": "10.248.64.0/18", "cni_cluster_cni_path": ["/usr/lib/cni"],
            "cni_cluster_bridge": "cnit-b-rbr0", "cni_cluster_subnets_file": f"{WORK}/routed-subnets.yml"}


def routed_plays(side: str, ping_count: int) -> list:
    """The role, ``ping_count`` ping tasks, or nothing, on the members."""
    body = {"role": {"roles": [{"role": "cnikit.cni.routed_network"}]},
            "ping": {"tasks": [{"name": f"ping {n}", "ansible.builtin.ping": {}} for n in range(1, ping_count + 1)]},
            "empty": {"tasks": []}}[side]
    return [dict({"name": f"routed benchmark, {side}", "hosts": ROUTED_HOSTS.group, "gather_facts": False}, **body)]


def role_tasks_run(tasks: dict) -> dict:
    """The role's tasks that returned a result, with how many hosts changed on each (a skipped
    task, the leave branch's include, returns none)."""
    return {name: task["hosts_changed"] for name, task in tasks.items() if "results" in task}


def converged_role_tasks(tasks: dict, run_name: str, expected: dict | None = None) -> dict:
    """The tasks of a role run that must have changed nothing (and, given ``expected``, run the same tasks)."""
    ran = role_tasks_run(tasks)
    changed = {name: hosts for name, hosts in ran.items() if hosts}
    if changed or (expected is not None and ran.keys() != expected.keys()):
        raise RuntimeError(f"{run_name}: the converged role changed {changed} (hosts per task) or ran other "
                           f"tasks than before: {sorted(ran)}")
    return ran


def case_routed(params: dict) -> dict:
    """The role cnikit.cni.routed_network converged on simulated SSH hosts, against as many ping
    tasks on the same hosts and an empty play (ansible-playbook's own start-up), interleaved."""
    count, rounds = params["routed_hosts"], params["routed_rounds"]
    try:
        built = harness.fleet.up(fleet_args(ROUTED_HOSTS, count))
        host_pids = [host["pid"] for host in harness.fleet.read_state(ROUTED_HOSTS.work)["hosts"]]
        inventory = fleet_inventory(ROUTED_HOSTS, count, routed_vars())

        def run_side(name: str, side: str, ping_count: int = 0) -> dict:
            return harness.run_playbook_costed(name, routed_plays(side, ping_count), inventory, count, host_pids,
                                               f"{ROUTED_HOSTS.work}/cp")

        provisioned = role_tasks_run(run_side("routed-provision", "role")["tasks"])
        if not any(provisioned.values()):
            raise RuntimeError("the role's first run changed nothing: the hosts were not fresh")
        # A first converged run, not measured, counts the tasks the pings stand against.
        counted_run = run_side("routed-count", "role")["tasks"]
        counted = converged_role_tasks(counted_run, "routed-count")
        counted_actions = {name: counted_run[name]["action"] for name in counted}
        ping_count = len(counted)
        samples = {side: [] for side in ROUTED_SIDES}
        per_task = {name: [] for name in counted}
        for r in range(rounds):
            shift = r % len(ROUTED_SIDES)  # rotated: no side always pays a cold start (an SSH master expired)
            for side in ROUTED_SIDES[shift:] + ROUTED_SIDES[:shift]:
                cost = run_side(f"routed-{side}-r{r}", side, ping_count)
                if side == "role":
                    converged_role_tasks(cost["tasks"], f"routed-role-r{r}", counted)
                    for name in per_task:
                        per_task[name].append(cost["tasks"][name]["seconds"])
                cost["task_seconds"] = sum(t.get("seconds", 0.0) for t in cost["tasks"].values())
                samples[side].append(cost)
    finally:
        harness.fleet.down(fleet_args(ROUTED_HOSTS, count))

    def measure(side: str, key: str) -> list:
        return [sample[key] for sample in samples[side]]

    def cpu_beyond_empty(side: str) -> list:
        return [s["controller_cpu"] + s["hosts_cpu"] - e["controller_cpu"] - e["hosts_cpu"]
                for s, e in zip(samples[side], samples["empty"])]

    ratio = paired_ratios(measure("role", "task_seconds"), measure("ping", "task_seconds"))
    return {
        "sides": {side: {key: summary(measure(side, key))
                         for key in ("task_seconds", "wall", "controller_cpu", "hosts_cpu")} for side in ROUTED_SIDES},
        "per_task": {name: dict(summary(values), action=counted_actions[name]) for name, values in per_task.items()},
        "ratio": ratio, "ratio_cpu": paired_ratios(cpu_beyond_empty("role"), cpu_beyond_empty("ping")),
        "ratio_wall_beyond_empty": paired_ratios(
            [s - e for s, e in zip(measure("role", "wall"), measure("empty", "wall"))],
            [s - e for s, e in zip(measure("ping", "wall"), measure("empty", "wall"))]),
        "ping_count": ping_count, "hosts": count, "rounds": rounds, "build_seconds": built.get("seconds"),
        "provision_changed": sorted(name for name, hosts in provisioned.items() if hosts),
        "target": 1.5, "met": ratio["median"] <= 1.5,
    }


# -- the run ---------------------------------------------------------------------------------------

CASES = {
    "engine": case_engine, "batch": case_batch, "converged": case_converged, "validation": case_validation,
    "install": case_install, "scaling": case_scaling, "imports": case_imports,
    "fleet": case_fleet, "payload": case_payload, "attach40": case_attach40, "routes": case_routes, "routed": case_routed,
}


def machine() -> dict:
    def output(*argv):
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()

    with open("/proc/meminfo", encoding="ascii") as handle:
        mem_kib = int(next(line.split()[1] for line in handle if line.startswith("MemTotal:")))
    with open("/proc/cpuinfo", encoding="ascii") as handle:
        cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "unknown")
    return {
        "nproc": output("nproc"), "cpu": cpu, "memory_gib": round(mem_kib / 2**20, 1),
        "kernel": platform.release(), "os": output("sh", "-c", ". /etc/os-release; echo $PRETTY_NAME"),
        "python": output(PYTHON, "-c", "import platform; print(platform.python_version())"),
        "ansible_core": output(PYTHON, "-c", "import ansible.release; print(ansible.release.__version__)"),
        "plugins_package": output("dpkg-query", "-W", "-f=${Version}", "containernetworking-plugins"),
        "commit": output("git", "-C", REPO, "rev-parse", "--short", "HEAD"),
        "load_before": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N, one or two rounds: a smoke run")
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="run only these cases (repeatable)")
    parser.add_argument("--output", default=os.path.join(REPO, "docs", "performance.md"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("needs root: the cases create network namespaces and bridges")
    params = QUICK if args.quick else FULL
    results = {"mode": "quick" if args.quick else "full", "params": params, "machine": machine(),
               "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "cases": {}}
    with harness.host_guard():
        for name in args.case or CASES:
            print(f"==> {name}", flush=True)
            try:
                results["cases"][name] = CASES[name](params)
            except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
                results["cases"][name] = {"error": str(exc)}
            print(json.dumps(results["cases"][name], default=str)[:400], flush=True)
    results["machine"]["load_after"] = os.getloadavg()
    results["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    os.makedirs(os.path.join(REPO, "benchmarks", "results"), exist_ok=True)
    raw = os.path.join(REPO, "benchmarks", "results", f"{results['started'].replace(':', '')}.json")
    with open(raw, "w", encoding="utf-8") as out:
        json.dump(results, out, indent=1)
    # Some cases only: their sections replace the old ones, the others stay as they were measured.
    partial = bool(args.case) and os.path.exists(args.output)
    if partial:
        with open(args.output, encoding="utf-8") as handle:
            text = report.update(handle.read(), results)
    else:
        text = report.render(results)
    with open(args.output, "w", encoding="utf-8") as out:
        out.write(text)
    print(f"raw results: {raw}\nreport: {args.output}")


if __name__ == "__main__":
    main()
