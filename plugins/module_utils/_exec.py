# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Finding and running plugin binaries: the CNI_* environment, stdin, a timeout that
terminates then kills, retries of "text file busy", and errors that say what happened.
:class:`Executor` declares what the collection asks of plugin binaries (libcni's
``invoke.Exec``: find, call, the supported versions; and which release a binary is);
:class:`PluginExecutor` answers it with the real binaries and is the one object the engine,
validation, cni_info's facts and the installer touch plugins through, so that tests can hand
them another (tests/utils/fake_executor.py)."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import math
import os
import re
import signal
import subprocess
import threading
import time
from typing import Protocol

from ._binaries import identity, recorded_versions
from ._defaults import DEFAULT_TIMEOUT
from ._errors import CNIError, ConfigError, PluginError, PluginNotFoundError
from ._identifiers import check_plugin_type
from ._manifest_file import REFERENCE_SET, binary_set, is_release_version, manifest_path, read_manifest
from ._result import HIGHEST_VERSION

TERMINATE_GRACE = 2.0  # seconds between SIGTERM and SIGKILL for a plugin past its timeout
TEXT_BUSY_RETRIES = 5  # a binary being replaced while we exec it answers ETXTBSY for a moment
OUTPUT_EXCERPT = 2000  # characters of unparseable output quoted in an error

# A VERSION request at the highest spec version, as libcni's GetVersionInfo sends it.
VERSION_PROBE_STDIN = json.dumps({"cniVersion": HIGHEST_VERSION}, separators=(",", ":")).encode()
# libcni's GetVersionInfo fills CNI_NETNS, CNI_IFNAME and CNI_PATH with this placeholder, because
# plugins built against an older skel refuse to run without them. We send the very request a
# runtime sends, so a plugin answers us as it answers containerd or CRI-O.
VERSION_PROBE_PLACEHOLDER = "dummy"
# Debian's package of the reference plugins, and where it puts them: the release of a binary
# there is the package's version.
DISTRO_PACKAGE = ("containernetworking-plugins", "/usr/lib/cni")
DPKG_STATUS = "/var/lib/dpkg/status"  # where dpkg-query reads which version of a package is installed
# The dynamic loader's refusal of a binary linked against a newer glibc than the host's (Debian's
# plugins 1.1.1 and 1.9.1 need 2.32 and 2.34; Debian 11 has 2.31).
GLIBC_MISSING_RE = re.compile(rb"version `GLIBC_([0-9]+(?:\.[0-9]+)*)' not found")
CNI_ENV_KEYS = ("CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH")


def find_plugin(plugin_type: str, cni_path: list) -> str:
    """The first regular, executable ``<dir>/<plugin_type>`` along ``cni_path``."""
    check_plugin_type(plugin_type)
    if not cni_path:
        raise ConfigError("cni_path", "no plugin directories given", cni_path)
    for directory in cni_path:
        candidate = os.path.join(directory, plugin_type)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise PluginNotFoundError(plugin_type, cni_path)


def plugin_env(command: str, cni_path: list, container_id: str = "", netns: str = "",
               ifname: str = "", cni_args: str = "") -> dict:
    """All six CNI_* variables, as libcni sets them: empty where a value is unused."""
    return {
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": container_id,
        "CNI_NETNS": netns,
        "CNI_IFNAME": ifname,
        "CNI_ARGS": cni_args,
        "CNI_PATH": os.pathsep.join(cni_path),
    }


def _excerpt(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= OUTPUT_EXCERPT else text[:OUTPUT_EXCERPT] + "..."


# The one place of the collection that starts a process itself, hence the one pylint
# ansible-bad-function exception (a comment at the call, not an entry of the sanity ignore files,
# which Automation Hub's ansible-lint rule sanity[cannot-ignore] refuses): a plugin call needs
# stdin, an environment of its own, and a deadline the watchdog enforces on its whole process
# group while other calls of the task run; it must also work without an AnsibleModule (the
# engine serves module_utils and tests alike). AnsibleModule.run_command offers no timeout.
def _spawn(path: str, env: dict) -> subprocess.Popen:
    for attempt in range(TEXT_BUSY_RETRIES + 1):
        try:
            # A session of its own, so a timeout can signal whatever the plugin forked too.
            return subprocess.Popen(  # pylint: disable=consider-using-with,ansible-bad-function
                [path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, close_fds=True, start_new_session=True,
            )
        except OSError as exc:
            if exc.errno != errno.ETXTBSY or attempt == TEXT_BUSY_RETRIES:
                raise
            time.sleep(0.1 * 2 ** attempt)
    raise AssertionError("unreachable")  # pragma: no cover


class _Watchdog:
    """Stops plugins past their deadline: SIGTERM to the process group, then SIGKILL after a grace
    period. One thread serves every plugin call of the process (a thread per call cost 0.15 ms to
    start, five times per ADD+DEL of a three-plugin list). Callers block in communicate() without
    a timeout, which sleeps until the plugin exits instead of polling for its exit."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._watched: dict = {}  # Popen -> (deadline, signals still to send)
        self._wakes_at = math.inf
        self._thread: threading.Thread | None = None

    def watch(self, process: subprocess.Popen, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            self._watched[process] = (deadline, (signal.SIGTERM, signal.SIGKILL))
            if self._thread is None:
                self._thread = threading.Thread(target=self._guard, name="cnikit-plugin-watchdog", daemon=True)
                self._thread.start()
            if deadline < self._wakes_at:  # else the guard wakes in time and finds it then
                self._changed.notify()

    def release(self, process: subprocess.Popen) -> bool:
        """Stop watching ``process``; True if it was signalled for running past its deadline."""
        with self._changed:
            _deadline, signals = self._watched.pop(process)
        return len(signals) < 2

    def _guard(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                for process, (deadline, signals) in list(self._watched.items()):
                    if signals and deadline <= now:
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(process.pid, signals[0])
                        self._watched[process] = (now + TERMINATE_GRACE, signals[1:])
                self._wakes_at = min((due for due, left in self._watched.values() if left), default=math.inf)
                self._changed.wait(None if self._wakes_at == math.inf else self._wakes_at - now)


_WATCHDOG = _Watchdog()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time signals between SIGRTMIN and SIGRTMAX have no name
        return str(number)


def error_from_output(plugin: str, verb: str, stdout: bytes, stderr: bytes, exit_status: int) -> PluginError:
    """Turn a failed plugin's output into an error: its JSON error on stdout first, then stderr,
    then the exit status or signal."""
    stderr_text = _excerpt(stderr)
    status = f"killed by signal {_signal_name(-exit_status)}" if exit_status < 0 else f"exit status {exit_status}"
    if stdout.strip():
        try:
            data = json.loads(stdout)
        except ValueError:
            data = None
        if isinstance(data, dict) and ("msg" in data or "code" in data):
            code = data.get("code")
            return PluginError(
                plugin, verb, str(data.get("msg") or f"no message ({status})"),
                code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                details=str(data.get("details") or ""), stderr=stderr_text, exit_status=exit_status,
            )
        return PluginError(plugin, verb, f"failed ({status}) and printed output that is not a CNI error: {_excerpt(stdout)}",
                           stderr=stderr_text, exit_status=exit_status)
    if stderr_text:
        return PluginError(plugin, verb, f"{stderr_text} ({status})", exit_status=exit_status)
    return PluginError(plugin, verb, f"failed with no error message ({status})", exit_status=exit_status)


def inherited_env() -> dict:
    """The environment a plugin inherits: ours, without CNI variables of our own caller."""
    return {k: v for k, v in os.environ.items() if k not in CNI_ENV_KEYS}


def run_plugin(path: str, env_vars: dict, stdin: bytes, timeout: float = DEFAULT_TIMEOUT,
               inherited: dict | None = None) -> bytes:
    """Run one plugin call with ``env_vars`` over ``inherited`` (:func:`inherited_env` when
    None); return its stdout, or raise PluginError."""
    plugin = os.path.basename(path)
    verb = env_vars.get("CNI_COMMAND", "")
    env = dict(inherited_env() if inherited is None else inherited)
    env.update(env_vars)
    try:
        process = _spawn(path, env)
    except OSError as exc:
        raise PluginError(plugin, verb, f"cannot execute {path}: {exc.strerror}") from exc
    _WATCHDOG.watch(process, timeout)
    try:
        stdout, stderr = process.communicate(stdin)
    finally:
        timed_out = _WATCHDOG.release(process)
    if timed_out:
        raise PluginError(plugin, verb, f"timed out after {timeout:g}s and was killed",
                          stderr=_excerpt(stderr), exit_status=process.returncode)
    if process.returncode != 0:
        _raise_if_glibc_too_old(plugin, verb, stderr)
        raise error_from_output(plugin, verb, stdout, stderr, process.returncode)
    return stdout


def _raise_if_glibc_too_old(plugin: str, verb: str, stderr: bytes) -> None:
    """Name the binary and both glibc versions when the loader refused to start it; its own
    message names the path it ran, a staging directory's during an install."""
    needed = GLIBC_MISSING_RE.findall(stderr or b"")
    if not needed:
        return
    newest = max((v.decode() for v in needed), key=lambda v: tuple(int(p) for p in v.split(".")))
    host = (os.confstr("CS_GNU_LIBC_VERSION") or "glibc unknown").split()[-1]
    raise PluginError(plugin, verb, f"the {plugin} binary needs glibc {newest} or later and this host has glibc {host}: "
                      "install plugins built for this host's distribution (its package) or statically linked ones")


def _query_versions(path: str, timeout: float) -> tuple:
    # The other CNI_* variables are set empty, as libcni does.
    env = plugin_env("VERSION", [VERSION_PROBE_PLACEHOLDER], netns=VERSION_PROBE_PLACEHOLDER,
                     ifname=VERSION_PROBE_PLACEHOLDER)
    try:
        stdout = run_plugin(path, env, VERSION_PROBE_STDIN, timeout)
    except PluginError as exc:
        if exc.msg == "unknown CNI_COMMAND: VERSION":  # a plugin older than VERSION itself
            return ("0.1.0",)
        raise
    plugin = os.path.basename(path)
    try:
        answer = json.loads(stdout)
    except ValueError:
        raise PluginError(plugin, "VERSION", f"printed output that is not JSON: {_excerpt(stdout)}") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("cniVersion"), str):
        raise PluginError(plugin, "VERSION", f"answer has no cniVersion: {_excerpt(stdout)}")
    versions = answer.get("supportedVersions")
    if versions is None and answer["cniVersion"] == "0.2.0":
        return ("0.1.0", "0.2.0")
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        raise PluginError(plugin, "VERSION", f"answer has no supportedVersions list: {_excerpt(stdout)}")
    return tuple(versions)


def _distro_release(run_command) -> str | None:
    """The upstream version of Debian's plugin package ("1.1.1+ds1-3+b5" -> "1.1.1"), if installed."""
    rc, out, _err = run_command(["dpkg-query", "-W", "-f", "${Version}", DISTRO_PACKAGE[0]])
    match = re.match(r"(?:\d+:)?(\d+\.\d+\.\d+)", out) if rc == 0 else None
    return match.group(1) if match else None


class Executor(Protocol):
    """What the collection asks of the plugin binaries along ``cni_path``."""

    cni_path: list

    def find(self, plugin_type: str) -> str:
        """The path of the binary of ``plugin_type`` a call runs, or PluginNotFoundError."""

    def call(self, plugin_type: str, verb: str, stdin: bytes, container_id: str = "", netns: str = "",
             ifname: str = "", cni_args: str = "") -> bytes:
        """Run ``verb`` of the plugin with libcni's environment; its stdout, or PluginError."""

    def supported_versions(self, plugin_type: str) -> list:
        """The CNI versions the binary of ``plugin_type`` supports (its VERSION answer)."""

    def binary_versions(self, path: str) -> list:
        """The VERSION answer of the binary at ``path`` (one not along ``cni_path`` too: a staged
        or shadowed one)."""

    def release(self, plugin_type: str) -> str | None:
        """The release of the reference plugins the binary of ``plugin_type`` is (like "1.6.2"),
        None when nothing says."""

    def binary_release(self, path: str) -> str | None:
        """The release the binary at ``path`` is, None when nothing says."""

    def release_evidence(self, path: str) -> list:
        """The identities of the files ``binary_release(path)`` reads its answer from: a
        remembered answer holds while they are unchanged."""

    def installed_set(self, path: str) -> tuple:
        """(set name, set) of the cnikit manifest beside the binary at ``path`` that lists it;
        (None, None) when none does."""

    def manifest_problem(self, directory: str) -> str | None:
        """Why the cnikit manifest of ``directory`` could not be read; None when it could, or
        there is none."""


def check_cni_path(cni_path: list) -> list:
    """The plugin directories, each absolute: a relative one would be looked up from the module's
    working directory (Ansible's, not the user's), and so would the plugins' own lookups of
    IPAM binaries through CNI_PATH."""
    for index, entry in enumerate(cni_path):
        if not isinstance(entry, str) or not os.path.isabs(entry):
            raise ConfigError(f"cni_path[{index}]", "must be an absolute path: a relative one is looked up from the "
                              "module's working directory, so whatever binary is there would run", entry)
    return list(cni_path)


class PluginExecutor(Executor):
    """Finds, runs and probes the plugin binaries along ``cni_path``, each call bounded by
    ``timeout`` seconds. ``run_command`` (``argv -> (rc, stdout, stderr)``, the module's
    ``run_command`` as ``_ansible_glue.command_runner`` hands it over) asks the package manager
    for a distro binary's release; without one the package is not asked."""

    def __init__(self, cni_path: list, timeout: float = DEFAULT_TIMEOUT, run_command=None):
        self.cni_path = check_cni_path(cni_path)
        self.timeout = timeout
        self._run_command = run_command
        # Read once: walking os.environ (decoding every variable) cost each call 50 µs.
        self._inherited = inherited_env()
        self._versions: dict = {}  # (path, identity) -> VERSION answer
        self._manifests: dict = {}  # directory -> (its cnikit manifest or None, why unreadable or None)

    def find(self, plugin_type: str) -> str:
        return find_plugin(plugin_type, self.cni_path)

    def call(self, plugin_type: str, verb: str, stdin: bytes, container_id: str = "", netns: str = "",
             ifname: str = "", cni_args: str = "") -> bytes:
        env = plugin_env(verb, self.cni_path, container_id, netns, ifname, cni_args)
        return run_plugin(self.find(plugin_type), env, stdin, self.timeout, self._inherited)

    def supported_versions(self, plugin_type: str) -> list:
        return self.binary_versions(self.find(plugin_type))

    def binary_versions(self, path: str) -> list:
        """Memoised while the binary is unchanged (see ``_binaries.identity``): by this executor,
        and across runs by the memo cni_plugin_install keeps beside the binaries it installed."""
        key = (path, tuple(identity(path) or ()))
        if key not in self._versions:
            self._versions[key] = tuple(recorded_versions(path) or _query_versions(path, self.timeout))
        return list(self._versions[key])

    def release(self, plugin_type: str) -> str | None:
        return self.binary_release(self.find(plugin_type))

    def binary_release(self, path: str) -> str | None:
        """The version the reference set of a cnikit manifest beside the binary records, or the
        version of the distribution package that owns it."""
        directory = os.path.dirname(path)
        set_name, plugin_set = self.installed_set(path)
        # Only the reference set's version is a release of the reference plugins; flannel's
        # v1.9.1-flannel1 or a site's 2024.1 says nothing about which checks apply. Nor does a
        # source's content digest, or a label recorded before the set took release versions only.
        if set_name == REFERENCE_SET and is_release_version(plugin_set.get("version")):
            return plugin_set["version"]
        if directory == DISTRO_PACKAGE[1] and self._run_command is not None:
            return self._distro_package_release
        return None

    @functools.cached_property
    def _distro_package_release(self) -> str | None:
        return _distro_release(self._run_command)

    def release_evidence(self, path: str) -> list:
        directory = os.path.dirname(path)
        evidence = [identity(manifest_path(directory))]
        if directory == DISTRO_PACKAGE[1] and self._run_command is not None:
            evidence.append(identity(DPKG_STATUS))  # dpkg-query's answer, from the package database
        return evidence

    def installed_set(self, path: str) -> tuple:
        directory, name = os.path.split(path)
        return binary_set(self._manifest(directory)[0], name)

    def manifest_problem(self, directory: str) -> str | None:
        return self._manifest(directory)[1]

    def _manifest(self, directory: str) -> tuple:
        """(the cnikit manifest of ``directory`` or None, why it could not be read or None), read
        once; an unreadable one lists nothing."""
        if directory not in self._manifests:
            try:
                self._manifests[directory] = (read_manifest(directory), None)
            except (CNIError, OSError) as exc:
                self._manifests[directory] = (None, str(exc))
        return self._manifests[directory]
