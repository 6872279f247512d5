# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Validation verdicts, remembered: a converged run of cni_network, or cni_info gathering the
networks, reuses the verdict of its last validation of the same network file when it is provably
the same answer, and then imports neither the validation, nor the plugins' rules, nor jsonschema.

A verdict is the configuration validated (for cni_network, as coercion made it) and the findings
validation added (a verdict with errors is never kept). Each reader keeps its own (``READERS``):
cni_network validates what its task declares as the file it will write, cni_info what the file
holds among the conf dir's networks, so neither's verdict stands for the other's. It holds while
all of these are as they were when it was reached:

- the inputs, hashed into the entry's key: the reader; the configuration it was given, exactly
  (cni_network's task's, before coercion; for cni_info, the network the file holds, its drop-in
  plugins added); the file's path and the conf dir; the identity (mode, device, inode, size, mtime,
  ctime) of every other entry of the conf dir and of its subdirectories (the other networks,
  drop-ins, files that cannot be loaded; the file itself is not an input: validation reads the
  configuration in the key, never the file's bytes); the plugin directories when the
  binaries are checked (``check_plugins``), or that they are not; and the source of the
  collection's own code that this process can load (rules, validation, version: in the AnsiballZ
  payload, each file's name, size and CRC-32 as the zip's central directory records them, read
  without decompressing anything; from a directory, each file's content);
- what validation asked of the binaries, re-asked: for each plugin type, the binary the executor
  finds, its identity (which vouches for its VERSION answer), and the identity of what its
  release is read from (``Executor.release_evidence``);
- what the plugins' checks read of the host (``_host_reads``), read again.

Entries live in the collection's state directory, beside the result cache, its locks and intent
markers: ``<cache_dir>/cnikit-verdicts/``, one per network file and reader (named by the sha256
of the file's path), not in the conf dir, which runtimes watch and read. As the binaries memo
(``_binaries``): written mode 0644; an entry the process's user does not own, that others may
write, that cannot be read or is not one, is a miss, and the validation runs. A verdict that
cannot be written is not remembered; nothing fails for it."""

from __future__ import annotations

import hashlib
import json
import os
import stat

from ._binaries import identity
from ._errors import CNIError
from ._fileio import atomic_write, ensure_dir
from ._host_reads import HostReads, answers_unchanged
from ._validation.report import NO_VALUE

VERDICTS_SUBDIR = "cnikit-verdicts"
VERDICT_FORMAT = 2
# Each reader's entry of a file: <sha256 of its path><suffix>.
READERS = {"cni_network": ".json", "cni_info": ".cni_info.json"}


def collection_code_digest() -> str:
    """A digest of the source of every module_utils file of this collection that this process can
    load: from the AnsiballZ payload's zip, or from the installed collection's directory."""
    archive = getattr(__loader__, "archive", None)  # zipimport: the payload
    if archive is not None:
        return archive_code_digest(archive, os.path.relpath(os.path.dirname(__file__), archive) + "/")
    return directory_code_digest(os.path.dirname(os.path.abspath(__file__)))


def archive_code_digest(archive: str, prefix: str) -> str:
    """sha256 of the name, size and CRC-32 of every ``.py`` file under ``prefix`` in the zip
    ``archive``, as its central directory records them: nothing is decompressed. The CRC-32 is of
    the file's content, so any edit changes the digest but one that keeps both a file's size and
    its CRC-32 (by chance, 1 in 2**32); whoever could craft that could change the validation's own
    code in the same payload."""
    import zipfile  # pylint: disable=import-outside-toplevel  # the payload's wrapper has loaded it

    digest = hashlib.sha256()
    with zipfile.ZipFile(archive) as payload:
        for info in sorted((i for i in payload.infolist() if i.filename.startswith(prefix) and i.filename.endswith(".py")),
                           key=lambda i: i.filename):
            digest.update(f"{info.filename[len(prefix):]}\0{info.file_size}\0{info.CRC}\0".encode())
    return digest.hexdigest()


def directory_code_digest(top: str) -> str:
    """sha256 of the relative path and source of every ``.py`` file under the directory ``top``."""
    digest = hashlib.sha256()
    for directory, subdirs, files in os.walk(top):
        subdirs.sort()
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(directory, name)
            digest.update(f"{os.path.relpath(path, top)}\0".encode())
            with open(path, "rb") as handle:
                digest.update(handle.read())
    return digest.hexdigest()


def conf_dir_identities(conf_dir: str, source: str) -> list | None:
    """[name, identity] of every entry of ``conf_dir`` and of its subdirectories (as
    ``dir/name``), sorted, but the network file ``source``; none when there is no such directory
    yet (validation finds no other network then either), None when it cannot be listed."""
    try:
        names = sorted(set(os.listdir(conf_dir)) - {os.path.basename(source)})
    except FileNotFoundError:
        return []
    except OSError:
        return None
    entries = []
    for name in names:
        path = os.path.join(conf_dir, name)
        entries.append([name, _lstat_identity(path)])
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                entries += [[f"{name}/{inner}", _lstat_identity(os.path.join(path, inner))]
                            for inner in sorted(os.listdir(path))]
            except OSError:
                entries.append([f"{name}/", None])
    return entries


def _lstat_identity(path: str) -> list | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def verdict_path(cache_dir: str, source: str, reader: str) -> str:
    """Where ``reader``'s verdict of the network file ``source`` is remembered."""
    return os.path.join(cache_dir, VERDICTS_SUBDIR, hashlib.sha256(source.encode()).hexdigest() + READERS[reader])


def forget(cache_dir: str, source: str) -> None:
    """Drop every reader's verdict of the network file ``source`` (removed), and the verdicts'
    directory once empty, so that a host whose networks are all gone keeps no trace of ours (a
    verdict another run writes meanwhile fails to be kept, which only costs that run's next
    validation)."""
    paths = [verdict_path(cache_dir, source, reader) for reader in READERS]
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass
    try:
        os.rmdir(os.path.dirname(paths[0]))  # fails while other verdicts are kept there
    except OSError:
        pass


class AskedBinaries:
    """The executor validation consults, recording each plugin type it asks about."""

    def __init__(self, executor):
        self.executor = executor
        self.cni_path = executor.cni_path
        self.types: list = []

    def _asked(self, plugin_type) -> None:
        if plugin_type not in self.types:
            self.types.append(plugin_type)

    def supported_versions(self, plugin_type: str) -> list:
        self._asked(plugin_type)
        return self.executor.supported_versions(plugin_type)

    def release(self, plugin_type: str) -> str | None:
        self._asked(plugin_type)
        return self.executor.release(plugin_type)


def binaries_evidence(executor, types: list) -> list:
    """[type, path found (None if none), its identity, its release's evidence] of each type."""
    evidence = []
    for plugin_type in types:
        try:
            path = executor.find(plugin_type)
        except CNIError:
            evidence.append([plugin_type, None, None, None])
            continue
        evidence.append([plugin_type, path, identity(path), executor.release_evidence(path)])
    return evidence


def _round_trips(value) -> bool:
    """Whether ``value`` comes back from JSON as it is (so a remembered finding reads the same)."""
    try:
        return repr(json.loads(json.dumps(value))) == repr(value)
    except (TypeError, ValueError):
        return False


class VerdictCache:
    """``reader``'s remembered verdict of the network file ``source``, whose configuration
    ``given`` it validates. ``executor``: what checks the binaries, or None when they are not
    checked."""

    def __init__(self, cache_dir: str, conf_dir: str, source: str, given: dict, executor, reader: str):
        self.path = verdict_path(cache_dir, source, reader)
        self.executor = executor
        inputs = {"format": VERDICT_FORMAT, "reader": reader, "code": collection_code_digest(), "given": given,
                  "source": source, "conf_dir": conf_dir, "conf_dir_entries": conf_dir_identities(conf_dir, source),
                  "cni_path": executor.cni_path if executor is not None else None}
        self.key = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()

    def validated(self, report, validate, keep: bool) -> dict:
        """The configuration the verdict is of, its findings added to ``report``: the remembered
        verdict when it provably holds, else ``validate(asked, host_reads)``'s, which adds its
        findings to ``report``, asks the binaries through ``asked`` (an AskedBinaries, None when
        they are not checked), the host through ``host_reads``, and returns the configuration it
        validated; that verdict is remembered when ``keep``."""
        recalled = self._recall(report)
        if recalled is not None:
            return recalled
        first_new_warning = len(report.warnings)
        asked = AskedBinaries(self.executor) if self.executor is not None else None
        host_reads = HostReads()
        validated = validate(asked, host_reads)
        if keep:
            self._remember(validated, report, first_new_warning, asked, host_reads)
        return validated

    def _recall(self, report) -> dict | None:
        """The configuration the remembered verdict is of, its findings added to ``report``; None
        when there is none that provably holds."""
        entry = _load(self.path)
        if entry is None or entry.get("key") != self.key or not answers_unchanged(entry.get("host_reads")):
            return None
        if not self._binaries_unchanged(entry.get("binaries")):
            return None
        warnings, validated = entry.get("warnings"), entry.get("validated")
        if not isinstance(validated, dict) or not isinstance(warnings, list) \
                or not all(isinstance(w, list) and len(w) == 4 and isinstance(w[2], list) for w in warnings):
            return None
        for path, message, value, of_host in warnings:
            report.warn(path, message, *value, of_host=of_host)
        return validated

    def _binaries_unchanged(self, binaries) -> bool:
        if not isinstance(binaries, list) or not all(isinstance(b, list) and b for b in binaries):
            return False
        if self.executor is None:
            return not binaries
        return binaries_evidence(self.executor, [b[0] for b in binaries]) == binaries

    def _remember(self, validated: dict, report, first_new_warning: int, asked: AskedBinaries | None,
                  host_reads: HostReads) -> None:
        """Keep the verdict just reached on ``validated`` (``report``'s warnings from
        ``first_new_warning`` on) unless it has errors or a finding JSON cannot carry; a cache
        that cannot be written is left as it is."""
        if report.errors:
            return
        warnings = []
        for finding in report.warnings[first_new_warning:]:
            value = [] if finding.value is NO_VALUE else [finding.value]
            if not _round_trips(value):
                return
            warnings.append([finding.path, finding.message, value, finding.of_host])
        entry = {"format": VERDICT_FORMAT, "key": self.key, "validated": validated, "warnings": warnings,
                 "binaries": binaries_evidence(self.executor, asked.types) if asked is not None else [],
                 "host_reads": host_reads.answers}
        if not _round_trips(entry["host_reads"]) or not _round_trips(validated):
            return
        try:
            ensure_dir(os.path.dirname(self.path), 0o700)  # missing parents 0755, as the result cache's
            atomic_write(self.path, (json.dumps(entry) + "\n").encode(), 0o644)
        except OSError:
            pass


def _load(path: str) -> dict | None:
    """The entry in ``path``; None when it is missing, unreadable, not ours, writable by others
    (whoever could write it could vouch for a configuration), or not an entry."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        try:
            entry = json.loads(handle.read())
        except (OSError, ValueError):
            return None
    return entry if isinstance(entry, dict) and entry.get("format") == VERDICT_FORMAT else None
