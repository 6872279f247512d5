# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""What the installer put into a directory and what it will change there: the manifest that
makes re-runs free and upgrades clean, a plan comparing a source with the directory, a staged
install where every binary answers VERSION before it replaces the old one, and the description
of the result. A source is any object with ``what`` (where it came from), ``files`` ({plugin
name: sha256}), ``identity`` ({algorithm: digest} of the whole source) and ``open(name)``.

The manifest records plugin *sets*: the reference release, flannel's release, a site's own
tarball..., each with its own source, version and files. A run installs, upgrades or removes one
set and never touches the binaries of another, nor files no set lists (another installer's)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field

from ._binaries import BinaryMemo
from ._download import Checksum, copy_hashed, file_digests
from ._errors import ConfigError, ReleaseError
from ._exec import Executor
from ._fileio import atomic_write, ensure_dir, fsync_dir, remove_if_exists, remove_written_file
from ._identifiers import is_plugin_file_name
from ._manifest_file import MANIFEST_FORMAT, REFERENCE_SET, is_release_version, manifest_path, manifest_sets
from ._plugin_rules.names import REFERENCE_PLUGINS

STAGE_PREFIX = ".cnikit-stage-"
BINARY_MODE = 0o755

# Release extras that are documentation, not plugins: never installed into dest.
EXTRA_RE = re.compile(r"^(?:LICENSE|NOTICE|README)(?:\..*)?$|\.(?:md|txt)$", re.IGNORECASE)


def is_plugin_name(name: str) -> bool:
    """Can ``name`` be a plugin binary in dest (a plain file name that is no release extra)?"""
    return is_plugin_file_name(name) and not EXTRA_RE.search(name)


# --- what is installed -----------------------------------------------------------------------

def build_manifest(sets: dict) -> dict | None:
    """The manifest (current format) recording ``sets``; None when no set is left."""
    return {"format": MANIFEST_FORMAT, "sets": dict(sorted(sets.items()))} if sets else None


def _want_owner() -> int | None:
    """Root-owned binaries when we run as root; an unprivileged run keeps its own uid."""
    return 0 if os.geteuid() == 0 else None


def sha256_of(path: str, memo: BinaryMemo) -> str:
    """A binary's sha256, hashed only when the memo does not know it any more."""
    digest = memo.get(path, "sha256")
    if digest is None:
        digest = file_digests(path)["sha256"]
        memo.put(path, sha256=digest)
    return digest


def installed_matches(dest: str, name: str, sha256: str, memo: BinaryMemo) -> bool:
    """Is ``dest/name`` a regular file (not a link) with this content, mode 0755 and right owner?"""
    path = os.path.join(dest, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    owner = _want_owner()
    if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != BINARY_MODE \
            or (owner is not None and (st.st_uid, st.st_gid) != (owner, owner)):
        return False
    return sha256_of(path, memo) == sha256


@dataclass(frozen=True)
class Request:
    """What the caller asks for, in the terms the manifest records."""

    source: str                      # masked URL or absolute path
    version: str | None
    plugins: tuple | None = None     # None: every binary the source holds
    checksum: Checksum | None = None
    set_name: str = REFERENCE_SET
    rename: dict | None = None       # {source member: installed name}


def manifest_is_current(manifest: dict | None, request: Request, dest: str, memo: BinaryMemo) -> bool:
    """True when the manifest records this very request for its set and every file the set
    lists is intact: then nothing needs to be fetched."""
    entry = manifest_sets(manifest).get(request.set_name)
    if not entry or entry.get("source") != request.source or entry.get("version") != request.version:
        return False
    if entry.get("plugins") != (list(request.plugins) if request.plugins is not None else None):
        return False
    if entry.get("rename") != (request.rename or None):
        return False
    pinned = request.checksum
    if pinned and pinned.hexdigest and entry.get("tarball", {}).get(pinned.algorithm) != pinned.hexdigest:
        return False
    return all(installed_matches(dest, name, digest, memo) for name, digest in entry["files"].items())


# --- plans -----------------------------------------------------------------------------------

@dataclass
class Plan:
    """What a run changes in ``dest`` for the set ``set_name``. ``old_manifest`` is the manifest
    as on disk (perhaps the old format), ``new_manifest`` the one the run leaves."""

    dest: str
    set_name: str
    old_manifest: dict | None
    new_manifest: dict | None
    install: list = field(default_factory=list)
    update: list = field(default_factory=list)
    adopt: list = field(default_factory=list)     # of ``update``: files no set installed, taken over
    remove: list = field(default_factory=list)
    modified: list = field(default_factory=list)  # ours to remove, but changed since: left in place

    @property
    def changed(self) -> bool:
        return bool(self.install or self.update or self.remove) or self.old_manifest != self.new_manifest

    @property
    def new_set(self) -> dict | None:
        return manifest_sets(self.new_manifest).get(self.set_name)


def plan_unchanged(dest: str, set_name: str, manifest: dict | None) -> Plan:
    """Nothing to do for the set; an old-format manifest is still written in the current one."""
    return Plan(dest, set_name, manifest, build_manifest(manifest_sets(manifest)))


def _select_plugins(available: dict, plugins: tuple | None, what: str) -> dict:
    if plugins is None:
        return dict(available)
    missing = sorted(set(plugins) - set(available))
    if missing:
        raise ConfigError("plugins", f"not in {what}, which holds {', '.join(sorted(available))}", missing)
    return {name: available[name] for name in plugins}


def _check_claims(sets: dict, set_name: str, wanted: dict) -> None:
    """A binary belongs to one set: refuse to take over another set's."""
    claims = [f"{name} is already installed by set {other}" for other, entry in sorted(sets.items())
              if other != set_name for name in sorted(entry["files"]) if name in wanted]
    if claims:
        raise ConfigError("plugin_set", f"{'; '.join(claims)}: a binary belongs to one set, so set {set_name} "
                          "cannot install it; leave it out with plugins or rename, or remove it from the other set",
                          set_name)


def _it(names: list) -> str:
    return "it" if len(names) == 1 else "them"


def _check_reference_set(request: Request, wanted: dict, previous: dict, what: str) -> None:
    """The set ``reference`` is the reference plugins' release, which validation and cni_info
    take its version for: refuse a source that is something else (flannel installed without a
    set of its own), and one that would drop reference plugins nobody named (a partial source
    without ``plugins`` or a release ``version``)."""
    known = REFERENCE_PLUGINS
    strangers = sorted(set(wanted) - known)
    if strangers:
        what_they_are = "is not a reference plugin" if len(strangers) == 1 else "are not reference plugins"
        raise ConfigError("plugin_set", f"{', '.join(strangers)} {what_they_are} ({', '.join(sorted(known))}), and a "
                          f"task without plugin_set installs the reference plugins' release (set {REFERENCE_SET}); "
                          f"install {_it(strangers)} as a set of its own, such as plugin_set: {strangers[0]} (or "
                          f"leave {_it(strangers)} out with plugins)", request.set_name)
    dropped = sorted((set(previous) & known) - set(wanted))
    if dropped and request.plugins is None and not is_release_version(request.version):
        raise ConfigError("plugin_set", f"{what} holds no {', '.join(dropped)}, which set {REFERENCE_SET} holds: "
                          f"installing it as set {REFERENCE_SET} would remove {_it(dropped)}. Install it as a set of "
                          f"its own with plugin_set, name what set {REFERENCE_SET} keeps with plugins, or give the "
                          "release it is as version", request.set_name)


def check_adopt_names(set_name: str, adopt: tuple, installs) -> None:
    """``adopt`` (adopt_foreign) may name only binaries the set installs (``installs``)."""
    strangers = sorted(set(adopt) - set(installs))
    if strangers:
        raise ConfigError("adopt_foreign", f"names {', '.join(strangers)}, which are not binaries set {set_name} "
                          f"installs (it installs {', '.join(sorted(installs))})", strangers)


def _check_foreign(dest: str, sets: dict, set_name: str, wanted: dict, adopt: tuple) -> list:
    """The binaries of ``wanted`` that are in dest although no set installed them (another
    installer's): the ones ``adopt`` names are taken over, any other is an error, since
    installing would overwrite it and a later removal of the set delete it. Returns those
    taken over."""
    check_adopt_names(set_name, adopt, wanted)
    owned = {name for entry in sets.values() for name in entry["files"]}
    foreign = sorted(name for name in wanted if name not in owned and os.path.lexists(os.path.join(dest, name)))
    refused = [name for name in foreign if name not in adopt]
    if refused:
        paths = ", ".join(os.path.join(dest, name) for name in refused)
        them = _it(refused)
        raise ConfigError("adopt_foreign", f"{paths} {'was' if them == 'it' else 'were'} not installed by any plugin "
                          f"set (another installer's, or copied by hand), and set {set_name} would overwrite {them}; "
                          f"nothing was changed. To take {them} over as set {set_name}'s own (a later removal of the "
                          f"set deletes {them}), add adopt_foreign: [{', '.join(refused)}]; else leave {them} out "
                          "with plugins or rename, or install into another dest", refused)
    return foreign


def plan_present(dest: str, old_manifest: dict | None, request: Request, source, memo: BinaryMemo,
                 force: bool = False, adopt: tuple = ()) -> Plan:
    """Compare the source's selected binaries with dest and the set's part of the manifest.
    ``adopt`` names binaries no set installed that the set may take over."""
    wanted = _select_plugins(source.files, request.plugins, source.what)
    sets = manifest_sets(old_manifest)
    previous = sets.get(request.set_name, {}).get("files", {})
    if request.set_name == REFERENCE_SET:
        _check_reference_set(request, wanted, previous, source.what)
    _check_claims(sets, request.set_name, wanted)
    adopted = _check_foreign(dest, sets, request.set_name, wanted, adopt)
    entry = {
        "version": request.version,
        "source": request.source,
        "tarball": source.identity,
        "plugins": list(request.plugins) if request.plugins is not None else None,
        "files": dict(sorted(wanted.items())),
    }
    if request.rename:
        entry["rename"] = dict(sorted(request.rename.items()))
    plan = Plan(dest, request.set_name, old_manifest, build_manifest({**sets, request.set_name: entry}),
                adopt=adopted)
    for name, digest in sorted(wanted.items()):
        if not os.path.lexists(os.path.join(dest, name)):
            plan.install.append(name)
        elif force or name in adopted or not installed_matches(dest, name, digest, memo):
            plan.update.append(name)
    _plan_removal(plan, {name: digest for name, digest in previous.items() if name not in wanted})
    return plan


def plan_absent(dest: str, old_manifest: dict | None, set_name: str, plugins: tuple | None) -> Plan:
    """Remove what the set installed (all of it, or the listed plugins); never a file another
    set or no set installed."""
    sets = manifest_sets(old_manifest)
    entry = sets.get(set_name)
    if not entry:
        return plan_unchanged(dest, set_name, old_manifest)
    names = set(entry["files"]) if plugins is None else set(plugins) & set(entry["files"])
    remaining = {n: d for n, d in entry["files"].items() if n not in names}
    if remaining:
        sets[set_name] = dict(entry, files=remaining)
    else:
        del sets[set_name]
    plan = Plan(dest, set_name, old_manifest, build_manifest(sets))
    _plan_removal(plan, {n: entry["files"][n] for n in names})
    return plan


def _plan_removal(plan: Plan, listed: dict) -> None:
    """Remove the files ``listed`` ({name: sha256 at install}) that still hold what was
    installed; one changed since (an operator's patched build, a file of someone else's) is
    left in place and reported."""
    for name, digest in sorted(listed.items()):
        path = os.path.join(plan.dest, name)
        if not os.path.lexists(path):
            continue
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and file_digests(path)["sha256"] == digest:
            plan.remove.append(name)
        else:
            plan.modified.append(name)


# --- doing it --------------------------------------------------------------------------------

def _stage_one(source, name: str, expected: str, stage: str, executor: Executor) -> list:
    """Write one binary into the staging directory, check its digest, and ask it VERSION."""
    path = os.path.join(stage, name)
    with source.open(name) as handle:
        if copy_hashed(handle, path, name) != expected:
            raise ReleaseError(f"{source.what}: {name} changed while it was being installed")
    os.chmod(path, BINARY_MODE)
    owner = _want_owner()
    if owner is not None:
        os.chown(path, owner, owner)
    return executor.binary_versions(path)


@contextlib.contextmanager
def _staging(dest: str):
    """A staging directory inside dest, flocked while this install uses it: a process killed
    mid-install (SIGKILL skips the clean-up) releases the lock, which marks its stage abandoned."""
    stage = tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=dest)
    fd = os.open(stage, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        os.close(fd)


def _remove_abandoned_stages(dest: str) -> None:
    """Remove the stages of killed installs; a stage still locked belongs to a running one."""
    for name in os.listdir(dest):
        path = os.path.join(dest, name)
        if not name.startswith(STAGE_PREFIX) or os.path.islink(path) or not os.path.isdir(path):
            continue
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(path, ignore_errors=True)
        except BlockingIOError:
            pass  # a running install's stage
        finally:
            os.close(fd)


def _missing_directories(path: str) -> list:
    """``path`` and its parents that do not exist yet, the deepest first."""
    missing = []
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def _claiming_manifest(plan: Plan) -> dict | None:
    """The manifest to write before the renames when they bring binaries the set did not list
    (new ones, adopted ones): the set as it was, listing those too. A run killed among the renames
    then leaves them the set's, repaired by the next run, not looking like another installer's;
    and the set's old version keeps that run from taking the directory for current."""
    old_entry = manifest_sets(plan.old_manifest).get(plan.set_name, {"files": {}})
    new_files = plan.new_set["files"]
    arriving = [name for name in plan.install + plan.update if name not in old_entry["files"]]
    if not arriving:
        return None
    files = {**old_entry["files"], **{name: new_files[name] for name in arriving}}
    return build_manifest({**manifest_sets(plan.old_manifest), plan.set_name: dict(old_entry, files=dict(sorted(files.items())))})


def _write_manifest(dest: str, manifest: dict) -> None:
    atomic_write(manifest_path(dest), (json.dumps(manifest, indent=2) + "\n").encode(), 0o644)


def apply(plan: Plan, source, executor: Executor, memo: BinaryMemo) -> dict:
    """Carry out ``plan``; return {name: supported CNI versions} of the binaries written (as
    ``executor`` probes them), which ``memo`` remembers with their digests.

    Every binary is staged in a directory inside dest (same filesystem) and answers VERSION
    before the first rename, so a bad release leaves dest as it was; a dest this run created
    for it (with its missing parents) is removed again."""
    created = _missing_directories(plan.dest)
    try:
        return _apply(plan, source, executor, memo)
    except BaseException:
        for directory in created:
            try:
                os.rmdir(directory)
            except OSError:
                break  # not empty: the failure came after binaries landed, or someone else's
        raise


def _apply(plan: Plan, source, executor: Executor, memo: BinaryMemo) -> dict:
    dest = plan.dest
    versions = {}
    if os.path.isdir(dest):
        _remove_abandoned_stages(dest)
    if plan.install or plan.update:
        ensure_dir(dest, BINARY_MODE)
        with _staging(dest) as stage:
            files = plan.new_set["files"]
            for name in plan.install + plan.update:
                versions[name] = _stage_one(source, name, files[name], stage, executor)
            claiming = _claiming_manifest(plan)
            if claiming is not None:
                _write_manifest(dest, claiming)
            for name in plan.install + plan.update:
                os.replace(os.path.join(stage, name), os.path.join(dest, name))
                # The identity after the rename, which moves the ctime.
                memo.put(os.path.join(dest, name), sha256=files[name], cni_versions=versions[name])
    for name in plan.remove:
        remove_if_exists(os.path.join(dest, name))
    if os.path.isdir(dest):
        fsync_dir(dest)
    if plan.new_manifest is None:
        remove_written_file(manifest_path(dest))
    elif plan.new_manifest != plan.old_manifest:
        ensure_dir(dest, BINARY_MODE)
        _write_manifest(dest, plan.new_manifest)
    return versions


# --- the result ------------------------------------------------------------------------------

def managed_plugins(dest: str, plugin_set: dict | None, versions: dict, executor: Executor, memo: BinaryMemo,
                    skip: set = frozenset()) -> dict:
    """Each plugin of the set: path, sha256 and supported CNI versions (None for ``skip``: files
    check mode has not written yet), asked of the binary (through ``executor``) unless the memo
    remembers them."""
    result = {}
    for name, digest in sorted((plugin_set or {}).get("files", {}).items()):
        path = os.path.join(dest, name)
        if name in versions:
            cni_versions = versions[name]
        elif name not in skip and os.path.isfile(path):
            cni_versions = memo.get(path, "cni_versions")
            if cni_versions is None:
                cni_versions = executor.binary_versions(path)
                memo.put(path, cni_versions=cni_versions)
        else:
            cni_versions = None
        result[name] = {"path": path, "sha256": digest, "cni_versions": cni_versions}
    return result


def _snapshot(manifest: dict | None) -> dict:
    if not manifest:
        return {}
    return {"format": manifest["format"], "sets": {
        name: {"version": entry.get("version"), "source": entry.get("source"), "files": sorted(entry["files"])}
        for name, entry in sorted(manifest_sets(manifest).items())}}


def foreign_binaries(dest: str, manifest: dict | None, leaving: list) -> list:
    """Executables in ``dest`` that no set installed (another installer's), ``leaving`` aside."""
    ours = {name for entry in manifest_sets(manifest).values() for name in entry["files"]} | set(leaving)
    try:
        names = os.listdir(dest)
    except (FileNotFoundError, NotADirectoryError):
        return []
    candidates = (name for name in names if not name.startswith(".") and name not in ours)
    return sorted(name for name in candidates if _is_executable_file(os.path.join(dest, name)))


def _is_executable_file(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def plan_result(plan: Plan, versions: dict, check_mode: bool, downloaded: bool, executor: Executor,
                memo: BinaryMemo) -> dict:
    """The module's return values for ``plan``, carried out (``versions``) or, in check mode, not."""
    plugin_set = plan.new_set
    pending = set(plan.install + plan.update) if check_mode else set()
    return {
        "changed": plan.changed,
        "dest": plan.dest,
        "manifest": manifest_path(plan.dest),
        "set": plan.set_name,
        "version": plugin_set.get("version") if plugin_set else None,
        "source": plugin_set.get("source") if plugin_set else None,
        "plugins": managed_plugins(plan.dest, plugin_set, versions, executor, memo, pending),
        "installed": list(plan.install),
        "updated": list(plan.update),
        "removed": list(plan.remove),
        "adopted": list(plan.adopt),
        "modified": list(plan.modified),
        "foreign": foreign_binaries(plan.dest, plan.new_manifest, plan.remove),
        "warnings": [f"{os.path.join(plan.dest, name)} was changed since it was installed: left in place, and no "
                     "longer managed" for name in plan.modified],
        "downloaded": downloaded,
        "diff": {"before": _snapshot(plan.old_manifest), "after": _snapshot(plan.new_manifest)},
    }
