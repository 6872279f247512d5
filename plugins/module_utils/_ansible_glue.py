# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The only module_utils that knows Ansible: what a service needs of the module running it (the
``ModuleHost`` handed to each service), the check for the managed node's libraries and the
translation of the collection's errors into fail_json."""

from __future__ import annotations

import errno
import importlib.util
import os
import platform
import re
import sys

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ._errors import CNIError, ReleaseError, error_result


# The managed node's libraries: the oldest version the tests run every module with, and their use.
# The floors' home is requirements/managed-node.txt (which pip, the plugins role and the test
# command read); a module's payload cannot read it, so a unit test holds these to it.
LIBRARIES = {
    "jsonschema": ("3.2.0", "to validate network configurations"),
    "pyroute2": ("0.7.2" if sys.version_info >= (3, 12) else "0.6.4" if sys.version_info >= (3, 10) else "0.5.14",
                 "to create and remove network namespaces"),
}

NEEDS_ROOT = ("This module needs root on the managed node (network namespaces, /var/lib/cni, "
              "/etc/cni/net.d, /opt/cni/bin): run the task with become: true.")


def command_runner(module):
    """``module.run_command`` as the other module_utils take a command runner: an argv list in,
    ``(rc, stdout, stderr)`` out, in the C locale; a program that cannot be started is rc 127
    with the reason, where run_command would fail the task."""
    def run(argv: list) -> tuple:
        try:
            return module.run_command(argv, environ_update={"LC_ALL": "C"}, handle_exceptions=False)
        except OSError as exc:
            return 127, "", str(exc)
    return run


def missing_libraries(*names: str) -> list:
    """Those of ``names`` the Python running the module cannot import."""
    return [name for name in names if importlib.util.find_spec(name) is None]


def require_libraries(module, *names: str) -> None:
    """Fail the task before it changes anything when the Python running the module lacks a
    library. The libraries are imported later, by the code that needs them (pyroute2 alone
    costs 0.2 s), so only their presence is checked here."""
    for name in names:
        minimum, purpose = LIBRARIES[name]
        spec = importlib.util.find_spec(name)
        if spec is None:
            module.fail_json(msg=missing_required_lib(
                name, reason=f"{purpose}. Install it with the cnikit.cni.plugins role, the distribution's "
                             f"python3-{name} package, or pip install '{name}>={minimum}' for that Python"))
        found = _installed_version(spec)
        if found is not None and _release(found) < _release(minimum):
            module.fail_json(msg=f"{name} {found} is older than {minimum}, the oldest this collection is tested with on "
                                 f"Python {sys.version_info[0]}.{sys.version_info[1]} ({sys.executable}): upgrade it "
                                 f"(pip install '{name}>={minimum}' for that Python), or set ansible_python_interpreter "
                                 f"to a Python whose {name} is newer")


def _installed_version(spec) -> str | None:
    """The version of the distribution that installed the package ``spec`` was found in, from its
    metadata directory beside it (``jsonschema-4.10.3.dist-info``, Debian 11's
    ``pyroute2-0.5.14.egg-info``, pip's ``pyroute2-0.5.14-py3.9.egg-info``); None without one (a
    copy on PYTHONPATH), which is then taken as recent enough. (importlib.metadata would find the
    same, but importing it and scanning every path entry costs every task 10 to 20 ms.)"""
    if not spec.submodule_search_locations and not spec.origin:
        return None
    package_dir = list(spec.submodule_search_locations or [spec.origin])[0]
    site_dir = os.path.dirname(package_dir.rstrip(os.sep))
    pattern = re.compile(rf"{re.escape(spec.name)}-([^-]+?)(?:-py\d[^-]*)?\.(?:dist|egg)-info", re.IGNORECASE)
    try:
        names = os.listdir(site_dir)
    except OSError:
        return None
    versions = [match.group(1) for match in map(pattern.fullmatch, names) if match]
    return max(versions, key=_release) if versions else None


def _release(text: str) -> tuple:
    """The leading release numbers of a version ("0.7.2.post1" -> (0, 7, 2))."""
    match = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def _permission_denied(error: BaseException) -> bool:
    """Whether the error, or one it was raised from, is the kernel refusing an unprivileged caller."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in (errno.EPERM, errno.EACCES):
            return True
        error = error.__cause__ or error.__context__
    return False


def fail_from_error(module, error: Exception, **result) -> None:
    """fail_json with the error's message and its structured fields under ``error``; an OSError
    is reported by its message. Without root, a refusal says that root is needed."""
    failure = error_result(error)
    if os.geteuid() != 0 and _permission_denied(error):
        failure["msg"] += f". {NEEDS_ROOT}"
    module.fail_json(**failure, **result)


def warn(module, text: str) -> None:
    """A warning that still says which host it comes from when a fleet's warnings are merged
    (Ansible prints each distinct text once, without naming the host)."""
    module.warn(f"{platform.node()}: {text}")


class ModuleHost:
    """What a service needs of Ansible, through the module running it: the services take this
    object (tests hand them a stand-in with the same methods), never the module itself."""

    def __init__(self, module):
        self._module = module
        self.check_mode = module.check_mode
        self.diff = module._diff  # pylint: disable=protected-access  # AnsibleModule's only spelling of diff mode

    @property
    def tmpdir(self) -> str:
        """The task's private temporary directory (made on first use), removed when it ends."""
        return self._module.tmpdir

    def warn(self, text: str) -> None:
        warn(self._module, text)

    def fail(self, msg: str, **result) -> None:
        """End the task as failed with ``msg`` and the result so far (does not return)."""
        self._module.fail_json(msg=msg, **result)

    def require_libraries(self, *names: str) -> None:
        require_libraries(self._module, *names)

    @staticmethod
    def missing_libraries(*names: str) -> list:
        return missing_libraries(*names)

    def hide(self, secret: str) -> None:
        """Keep a secret given inside another option (a password in a URL) out of the output."""
        self._module.no_log_values.add(secret)

    def run_command(self, argv: list) -> tuple:
        return command_runner(self._module)(argv)

    def backup(self, path: str) -> str:
        """A timestamped copy of ``path`` beside it, as Ansible's ``backup: true`` makes; its path."""
        return self._module.backup_local(path)

    def set_file_attributes(self, path: str, mode: int, uid: int | None, gid: int | None, diff: dict) -> bool:
        """Bring the file's mode, owner, group, SELinux context and chattr attributes to what the
        task says (in check mode, only predict it), adding what changes to ``diff``."""
        file_args = dict(self._module.load_file_common_arguments(self._module.params, path=path),
                         mode=mode, owner=uid, group=gid)
        return self._module.set_fs_attributes_if_different(file_args, False, diff)

    def fetch(self, url: str, timeout: float):
        """The response to a GET of ``url`` through Ansible's fetch_url: proxies,
        validate_certs, basic auth and timeout behave as in get_url."""
        # Imported on the first download only: it costs a converged run a quarter of a second.
        from ansible.module_utils.urls import fetch_url  # pylint: disable=import-outside-toplevel

        from ._download import mask_url  # pylint: disable=import-outside-toplevel

        # Credentials go to the URL they were given for, never along a redirect (a mirror's redirect
        # to a CDN or to anyone else): urllib would copy the Authorization header to the new host.
        response, info = fetch_url(self._module, url, timeout=timeout, unredirected_headers=["Authorization"])
        if info["status"] != 200 or response is None:
            reason = str(info.get("msg", "")).replace(url, mask_url(url))
            raise ReleaseError(f"cannot download {mask_url(url)}: HTTP {info['status']} {reason}".rstrip())
        return response


def run_module(service) -> None:
    """A module's whole ``main()``: the AnsibleModule of ``service.ARGUMENT_SPEC`` (every module
    of the collection supports check mode), then its task, ``service.run``."""
    module = AnsibleModule(supports_check_mode=True, **service.ARGUMENT_SPEC.module_kwargs())
    run_task(module, service.run)


def run_task(module, service) -> None:
    """A module's task: ``service(host, params, result)`` fills the result, which the task exits
    with; an error of the collection (or the OS) fails it with the result so far."""
    result = {}
    try:
        service(ModuleHost(module), module.params, result)
    except (CNIError, OSError) as error:
        fail_from_error(module, error, **result)
    module.exit_json(**result)
