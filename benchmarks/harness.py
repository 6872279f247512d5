# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the benchmark cases share: statistics, the host objects they create (all named
``cnit-b-*``) and their clean-up, running playbooks with per-task timings, and an HTTP server
that counts the bytes it serves."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPLACE = os.path.join(REPO, ".build", "inplace")
PYTHON = os.path.join(REPO, ".venv", "bin", "python")
CNI_PATH = ["/usr/lib/cni"]
PREFIX = "cnit-b-"
WORK = "/tmp/cnit-b-work"
ENGINE_WORK = "/tmp/cnit-b-engine"

sys.path[:0] = [INPLACE, os.path.join(REPO, "tests", "utils")]

# For run.py's fleet case, as harness.fleet.
import fleet  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
import hostclean  # noqa: E402  pylint: disable=wrong-import-position
import release_server  # noqa: E402  pylint: disable=wrong-import-position


# -- statistics --------------------------------------------------------------------------------

def summary(samples: list) -> dict:
    return {"n": len(samples), "median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def paired_ratios(numerators: list, denominators: list) -> dict:
    """Ratios of samples taken side by side (same round), summarised."""
    return summary([a / b for a, b in zip(numerators, denominators)])


# -- host objects ------------------------------------------------------------------------------

def conflist(name: str, bridge: str, subnet: str, data_dir: str) -> dict:
    """bridge + host-local + tuning, the list every attach case uses. No masquerade: nothing
    created here routes traffic off the host."""
    return {
        "cniVersion": "1.0.0",
        "name": name,
        "plugins": [
            {"type": "bridge", "bridge": bridge, "isGateway": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet}]], "dataDir": data_dir}},
            {"type": "tuning", "sysctl": {"net.core.somaxconn": "512"}},
        ],
    }


def run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def add_namespaces(names: list) -> None:
    for name in names:
        if not os.path.exists(f"/var/run/netns/{name}"):
            run("ip", "netns", "add", name)


def read_ip_forward() -> str:
    with open("/proc/sys/net/ipv4/ip_forward", encoding="ascii") as handle:
        return handle.read().strip()


@contextlib.contextmanager
def host_guard():
    """Clean ``cnit-b-*`` namespaces, links, portmap chains and work dirs before and after,
    even on failure, and put ``net.ipv4.ip_forward`` back as it was."""
    ip_forward = read_ip_forward()
    clean_all(ip_forward)
    os.makedirs(WORK)
    try:
        yield
    finally:
        clean_all(ip_forward)


def clean_all(ip_forward: str) -> None:
    hostclean.clean(PREFIX, ip_forward=ip_forward)
    for directory in (WORK, ENGINE_WORK):
        shutil.rmtree(directory, ignore_errors=True)


# -- playbooks ---------------------------------------------------------------------------------

def ansible_env(timings_path: str) -> dict:
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=INPLACE,
        ANSIBLE_CALLBACK_PLUGINS=os.path.join(REPO, "benchmarks", "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="cnit_bench_timer",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_LOCAL_TEMP=os.path.join(WORK, "ansible-local"),
        ANSIBLE_REMOTE_TEMP=os.path.join(WORK, "ansible-remote"),
        CNIT_BENCH_TIMINGS=timings_path,
    )
    env["PATH"] = os.path.dirname(PYTHON) + os.pathsep + env.get("PATH", "")
    return env


def run_playbook(name: str, plays: list, inventory: str | None = None, forks: int | None = None,
                 extra_env: dict | None = None, wrapper: tuple = ()) -> tuple:
    """Run plays on localhost with the venv's Python, or on the hosts of ``inventory`` with
    ``forks``; return (task timings, wall seconds). The playbook is JSON, which is YAML; its
    output goes to ``<WORK>/<name>.log``. ``wrapper``: a command ansible-playbook runs under
    (``ip netns exec <name>``); ``extra_env``: variables beyond the harness's."""
    playbook = os.path.join(WORK, f"{name}.yml")
    timings = os.path.join(WORK, f"{name}.timings.json")
    with open(playbook, "w", encoding="utf-8") as out:
        json.dump(plays, out, indent=1)
    started = time.perf_counter()
    with open(os.path.join(WORK, f"{name}.log"), "w", encoding="utf-8") as log:
        target = (["-i", inventory, "--forks", str(forks)] if inventory else
                  ["-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={PYTHON}"])
        status = subprocess.run(
            [*wrapper, os.path.join(os.path.dirname(PYTHON), "ansible-playbook"), *target, playbook],
            env=dict(ansible_env(timings), **(extra_env or {})), stdout=log, stderr=subprocess.STDOUT,
            check=False).returncode
    wall = time.perf_counter() - started
    with open(timings, encoding="utf-8") as handle:
        tasks = {task["name"]: task for task in json.load(handle)}
    failed = [t for t in tasks.values() if t.get("failed")]
    if status != 0 or failed:
        detail = failed[0]["msg"] if failed else f"exit status {status}"
        raise RuntimeError(f"playbook {name} failed (see {WORK}/{name}.log): {detail}")
    return tasks, wall


def run_playbook_costed(name: str, plays: list, inventory: str, forks: int, host_pids: list,
                        controller_marker: str) -> dict:
    """``run_playbook`` on the hosts whose first processes are ``host_pids``, with what the run cost:
    task timings, wall seconds, CPU seconds of the controller (ansible-playbook and the children it
    reaped, plus the SSH masters that ControlPersist detached, found by ``controller_marker`` in their
    command line) and of the hosts (every process of their PID namespaces)."""
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before_masters, before_hosts = processes_cpu_seconds(controller_marker), hosts_cpu_seconds(host_pids)
    tasks, wall = run_playbook(name, plays, inventory, forks)
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    masters = processes_cpu_seconds(controller_marker)
    children = (after_children.ru_utime + after_children.ru_stime) - (before_children.ru_utime + before_children.ru_stime)
    # A master that exited during the run is lost; one that started during it counts from nothing.
    masters_delta = sum(seconds - before_masters.get(pid, 0.0) for pid, seconds in masters.items())
    return {"tasks": tasks, "wall": wall, "controller_cpu": children + masters_delta,
            "hosts_cpu": hosts_cpu_seconds(host_pids) - before_hosts}


def _stat_cpu_seconds(pid: int, with_reaped_children: bool) -> float:
    """utime + stime (and with ``with_reaped_children`` cutime + cstime) of ``pid``, in seconds."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    # After the command: state is field 3 of proc(5), utime..cstime fields 14 to 17.
    ticks = [int(value) for value in fields[11:15 if with_reaped_children else 13]]
    return sum(ticks) / os.sysconf("SC_CLK_TCK")


def _pids() -> list:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def processes_cpu_seconds(marker: str) -> dict:
    """Own CPU seconds of each process whose command line holds ``marker``, by PID."""
    found = {}
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found[pid] = _stat_cpu_seconds(pid, with_reaped_children=False)
        except OSError:
            continue  # it ended while being read
    return found


def hosts_cpu_seconds(host_pids: list) -> float:
    """CPU seconds used so far by every process of the PID namespaces of ``host_pids``.

    Each process counts its own time and its reaped children's (cutime, cstime, which include
    what those children had reaped in turn). A child that has ended and been reaped is no longer
    in /proc, so its time is counted once, in its parent's; a living process's time is not yet in
    any parent's, so it is counted once, as its own. The sum is every CPU tick the namespace's
    processes ever used, as long as no process ends whose parent is outside the namespace (only the
    host's first process has such a parent, and it lives as long as the host)."""
    namespaces = {os.readlink(f"/proc/{pid}/ns/pid") for pid in host_pids}
    total = 0.0
    for pid in _pids():
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") in namespaces:
                total += _stat_cpu_seconds(pid, with_reaped_children=True)
        except OSError:
            continue  # it ended while being read; the scans run between playbooks, on idle hosts
    return total


def play(tasks: list, module_defaults: dict | None = None, hosts: str = "localhost") -> dict:
    return {"name": "cnikit.cni benchmark", "hosts": hosts, "gather_facts": False,
            "module_defaults": module_defaults or {}, "tasks": tasks}


# -- a release server that counts what it serves -------------------------------------------------

class _CountingHandler(release_server._QuietHandler):  # pylint: disable=protected-access
    """Logs every request with the bytes of its response body."""

    def __init__(self, *args, requests: list, **kwargs):
        self._requests = requests
        super().__init__(*args, **kwargs)

    def copyfile(self, source, outputfile):
        data = source.read()
        outputfile.write(data)
        self._requests.append({"time": time.time(), "path": self.path, "bytes": len(data)})


def start_counting_server(root: str) -> tuple:
    """Serve ``root`` on 127.0.0.1; return (server, base URL, list of served requests)."""
    requests = []
    handler = functools.partial(_CountingHandler, directory=root, requests=requests)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", requests
