# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""A network declared as a conflist file: built from options or a whole config, placed in the
conf dir under a predictable name, validated against the host (installed binaries, the other
networks), compared by meaning with what is on disk, and written with its mode and owner."""

from __future__ import annotations

import copy
import errno
import grp
import json
import os
import pwd
import stat

from ._conflist import (
    CONFLIST_EXTENSIONS, ENVELOPE_OPTIONS, TOO_DEEP, dropin_files, go_json_problem, is_single_conf, libcni_order,
    load_conf_dir, render_conflist, single_conf_as_list,
)
from ._errors import CNIError, ConfigError
from ._exec import Executor
from ._fileio import atomic_write
from ._identifiers import check_conflist_file_name, check_file_name, check_network_name
from ._host_reads import HostReads
from ._validation.report import ValidationReport

DEFAULT_PRIORITY = 10
# The errors of a rename that cannot replace the file, as Ansible's unsafe_writes understands them.
RENAME_BLOCKED_ERRNOS = (errno.EPERM, errno.EXDEV, errno.EACCES, errno.ETXTBSY, errno.EBUSY)
DEFAULT_CNI_VERSION = "1.0.0"


def conflist_path(conf_dir: str, name: str, priority: int = DEFAULT_PRIORITY, filename: str | None = None) -> str:
    """``<conf_dir>/<priority, two digits>-<name>.conflist``, or ``<conf_dir>/<filename>``."""
    if filename is None:
        if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 99:
            raise ConfigError("priority", "must be an integer from 0 to 99", priority)
        return os.path.join(conf_dir, check_file_name(f"{priority:02d}-{name}.conflist", "name", name))
    if not isinstance(filename, str) or not filename or "/" in filename or filename.startswith("."):
        raise ConfigError("filename", "must be a plain file name in conf_dir, not a path or a hidden file", filename)
    check_conflist_file_name(filename)
    if not filename.endswith(CONFLIST_EXTENSIONS):
        raise ConfigError("filename", "must end in .conflist: runtimes read network lists only from such files", filename)
    return os.path.join(conf_dir, filename)


def build_conflist(name: str, plugins: list | None = None, config=None, **envelope) -> tuple:
    """The conflist a task declares, the findings of parsing it, and whether ``config`` was a
    single-plugin network: ``(conf, report, converted_from_conf)``.

    ``config`` is a whole conflist (dict or JSON text), or a single-plugin network (a ``.conf``),
    which becomes the one-plugin list libcni loads it as; the envelope options given (not None)
    override its keys. Without ``config``, ``plugins`` and the envelope options make the list."""
    check_network_name(name, "name")
    report = ValidationReport()
    option = "config" if config is not None else "plugins"
    if config is None:
        conf = {"cniVersion": envelope.get("cni_version") or DEFAULT_CNI_VERSION, "name": name, "plugins": plugins}
    elif isinstance(config, dict):
        conf = copy.deepcopy(config)
    elif isinstance(config, (str, bytes)):
        conf, report = _parse_config_text(config)
    else:
        raise ConfigError("config", "must be a conflist as a mapping or as JSON text", type(config).__name__)
    if not isinstance(conf, dict):
        raise ConfigError("config", "must be a JSON object", conf)
    try:
        # As the file will hold it: YAML's non-string keys become strings, tuples become lists.
        conf = json.loads(json.dumps(conf))
    except (TypeError, ValueError) as exc:
        raise ConfigError(option, f"cannot be written as JSON: {exc}") from None
    except RecursionError:
        raise ConfigError(option, TOO_DEEP) from None
    problem = go_json_problem(conf)
    if problem:
        raise ConfigError(f"config.{problem.path}" if config is not None else problem.path, problem.message,
                          problem.value)
    converted = config is not None and is_single_conf(conf)
    if converted:
        # Its plugin keeps name and cniVersion (single_conf_as_list): the list's, the task's when it sets them.
        conf.setdefault("name", name)
        if envelope.get("cni_version") is not None:
            conf["cniVersion"] = envelope["cni_version"]
        conf = single_conf_as_list(conf)
    if conf.setdefault("name", name) != name:
        raise ConfigError("config.name", f"differs from the task's name {name!r}", conf["name"])
    for option, key in ENVELOPE_OPTIONS.items():
        if envelope.get(option) is not None:
            conf[key] = envelope[option]
    return conf, report, converted


def _parse_config_text(text: str | bytes) -> tuple:
    """``config`` given as JSON text: ``(data, findings of parsing it)``; those of a single-plugin
    network name their paths in the list it becomes (parse_conflist_text)."""
    from ._validation.parse import parse_conflist_text  # pylint: disable=import-outside-toplevel  # loads every plugin's rules
    conf, report = parse_conflist_text(text)
    if conf is None:
        error = report.errors[0]
        raise ConfigError(f"config.{error.path}" if error.path else "config", error.message)
    return conf, report


def normalise(conf: dict) -> tuple:
    """(file bytes, the config as it reads back): envelope keys first, 2-space indent."""
    data = render_conflist(conf)
    return data, json.loads(data)


def validate_on_host(conf: dict, path: str, conf_dir: str, report: ValidationReport,
                     executor: Executor | None = None, host_reads: HostReads | None = None) -> ValidationReport:
    """Validate ``conf`` as the file ``path`` among the other networks of ``conf_dir``; with
    ``executor``, also against the plugin binaries it finds (their versions and release) and the
    host, whose reads go to ``host_reads``."""
    from ._validate import validate_network_list  # pylint: disable=import-outside-toplevel  # a remembered verdict needs none of it
    loaded = load_conf_dir(conf_dir)
    others = [n for n in loaded.networks if n.source != path]
    for problem in loaded.problems:
        if problem.path == path:
            continue  # the file this task replaces
        if libcni_order(problem.path) < libcni_order(path):
            report.error("", f"{problem.path}, read before this file, cannot be loaded ({problem.reason}); "
                         "libcni stops at it and would never reach this network", of_host=True)
        else:
            report.warn("", f"{problem.path} cannot be loaded: {problem.reason}", of_host=True)
    probe = executor.supported_versions if executor is not None else None
    release = executor.release if executor is not None else None
    return validate_network_list(conf, installed_versions=probe, installed_release=release, other_networks=others,
                                 source=path, report=report, dropin_files=_dropins_of(conf, conf_dir),
                                 host_reads=host_reads)


def _dropins_of(conf: dict, conf_dir: str) -> list | None:
    """The drop-in plugin files libcni would add to ``conf``; None when its name makes no path."""
    try:
        return dropin_files(conf_dir, check_network_name(conf.get("name")))
    except ConfigError:
        return None


def same_content(existing: bytes | None, conf: dict) -> bool:
    """Whether the file on disk already says ``conf`` (formatting aside)."""
    if existing is None:
        return False
    try:
        return json.loads(existing) == conf
    except ValueError:
        return False


def files_declaring(conf_dir: str, name: str, path: str) -> list:
    """The files a runtime could load network ``name`` from: ``path`` if it exists, and every
    file of ``conf_dir`` whose network is called ``name``."""
    found = [path] if os.path.isfile(path) else []
    found += [n.source for n in load_conf_dir(conf_dir).networks if n.name == name and n.source not in found]
    return found


def parse_mode(mode) -> int:
    if isinstance(mode, int) and not isinstance(mode, bool):
        value = mode
    else:
        try:
            value = int(str(mode), 8)
        except ValueError:
            raise ConfigError("mode", "must be an octal file mode like '0644'", mode) from None
    if not 0 <= value <= 0o7777:
        raise ConfigError("mode", "must be an octal file mode like '0644'", mode)
    if value & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX):
        raise ConfigError("mode", "must not set the setuid, setgid or sticky bit: a conflist is read, not run", mode)
    return value


def mode_warning(mode: int) -> str | None:
    """Why a conflist mode is dangerous, if it is: whoever can write the file chooses the
    plugin binaries root runs, and their arguments."""
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"mode 0{mode:03o} lets group or other users write the conflist, and so choose the plugin binaries "
                "that root runs for this network; use 0644 or tighter")
    return None


def resolve_id(value, kind: str) -> int | None:
    """A user or group name or number as a numeric id (None stays None)."""
    if value is None:
        return None
    text = str(value)
    if text.isdigit():
        return int(text)
    try:
        return pwd.getpwnam(text).pw_uid if kind == "owner" else grp.getgrnam(text).gr_gid
    except KeyError:
        raise ConfigError(kind, f"no such {'user' if kind == 'owner' else 'group'} on the host", value) from None


def ownership_changes(path: str, mode: int, uid: int | None, gid: int | None) -> dict:
    """What replacing the file at ``path`` with one of these attributes changes, in the form of
    Ansible's attribute diffs (``{"before": {...}, "after": {...}}``); empty when nothing does."""
    st = os.stat(path)
    before, after = {}, {}
    if stat.S_IMODE(st.st_mode) != mode:
        before["mode"], after["mode"] = f"0{stat.S_IMODE(st.st_mode):03o}", f"0{mode:03o}"
    if uid is not None and st.st_uid != uid:
        before["owner"], after["owner"] = st.st_uid, uid
    if gid is not None and st.st_gid != gid:
        before["group"], after["group"] = st.st_gid, gid
    return {"before": before, "after": after} if before else {}


def write_file(path: str, data: bytes, mode: int, uid: int | None, gid: int | None,
               unsafe_writes: bool = False) -> None:
    """Replace ``path`` atomically; with ``unsafe_writes``, write it in place where no rename
    can replace it (a bind-mounted file, a directory the writer cannot create files in)."""
    try:
        atomic_write(path, data, mode, uid, gid)
    except OSError as exc:
        if exc.errno not in RENAME_BLOCKED_ERRNOS:
            raise
        if not unsafe_writes:
            raise CNIError(f"cannot replace {path} atomically ({exc.strerror}); if it is bind-mounted or its "
                           "directory is read-only, set unsafe_writes=true to write it in place") from exc
        _write_in_place(path, data, mode, uid, gid)


def _write_in_place(path: str, data: bytes, mode: int, uid: int | None, gid: int | None) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as handle:
        # Emptied first, so a tighter mode or owner is in place before the new content is.
        os.fchmod(fd, mode)
        if uid is not None or gid is not None:
            os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
        handle.write(data)
        handle.flush()
        os.fsync(fd)
