# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the collection's modules as Ansible runs them on a host (a Python process reading its
arguments from a file), to completion or killed with SIGKILL after a delay."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ansible_collections.cnikit.cni.plugins.module_utils import _engine

# The directory holding ansible_collections/ (not resolved: the tree is a symlink farm).
INPLACE = str(Path(os.path.abspath(_engine.__file__)).parents[5])
PACKAGE = "ansible_collections.cnikit.cni.plugins.modules."


def command(module: str, args: dict, workdir: str) -> list:
    """The argv of one module run; the module's own temporary files go under ``workdir``."""
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, f"{module}-args.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_remote_tmp=workdir, _ansible_tmpdir=None)}, handle)
    return [sys.executable, "-m", PACKAGE + module, path]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([INPLACE] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run(module: str, args: dict, workdir: str, umask: int | None = None) -> dict:
    """Run a module to completion (optionally under ``umask``) and return its JSON result."""
    done = subprocess.run(command(module, args, workdir), capture_output=True, text=True, env=_env(), check=False,
                          preexec_fn=None if umask is None else lambda: os.umask(umask))
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"{module} printed no JSON (rc {done.returncode}): {done.stdout}\n{done.stderr}") from None


def run_killed(module: str, args: dict, workdir: str, delay: float) -> bool:
    """Start a module and SIGKILL its process group after ``delay`` seconds (plugins it runs are
    in sessions of their own and survive, as they do when Ansible's worker is killed).
    True if the kill landed, False if the module had finished first."""
    process = subprocess.Popen(command(module, args, workdir), stdout=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                               stderr=subprocess.DEVNULL, env=_env(), start_new_session=True)
    try:
        process.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return True


def run_killed_when(module: str, args: dict, workdir: str, ready, timeout: float = 30.0) -> None:
    """Start a module and SIGKILL its process group as soon as ``ready()`` is true (polled), as
    an operator's Ctrl-C or a lost connection stops it at that point."""
    process = subprocess.Popen(command(module, args, workdir), stdout=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                               stderr=subprocess.DEVNULL, env=_env(), start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{module} finished or timed out before the point to kill it at")
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def wait_for_orphans(marker: str, timeout: float = 30.0) -> int:
    """Wait until no process whose environment or command line holds ``marker`` is left (plugins
    orphaned by a kill); return how many there were."""
    seen = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [pid for pid in os.listdir("/proc") if pid.isdigit() and int(pid) != os.getpid() and _mentions(pid, marker)]
        seen.update(alive)
        if not alive:
            return len(seen)
        time.sleep(0.02)
    raise AssertionError(f"processes still running after {timeout}s: {sorted(seen)}")


def _mentions(pid: str, marker: str) -> bool:
    needle = marker.encode()
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                if needle in handle.read():
                    return True
        except OSError:
            return False
    return False
