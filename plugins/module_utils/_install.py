# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Installing CNI plugin binaries, the one path of cni_plugin_install: the options resolve to a
request and an opened source (``_sources``, ``_download``), which one plan compares with dest
and its manifest (``_manifest``), carried out unless in check mode, and described as the
module's result; with the module's options (ARGUMENT_SPEC), which ``Options`` are built from
(cni_plugin_install's task is ``_plugin_install_task``)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, fields

from ._argspec import ArgumentSpec
from ._binaries import BinaryMemo
from ._defaults import DEFAULT_CNI_PATH
from ._download import Limits, RedirectRecorder, cleartext_warning, mask_url, parse_checksum
from ._errors import ConfigError, ReleaseError
from ._exec import PluginExecutor
from ._identifiers import is_plugin_file_name
from ._manifest import (
    Plan, Request, apply, check_adopt_names, is_plugin_name, manifest_is_current, plan_absent, plan_present,
    plan_result, plan_unchanged,
)
from ._manifest_file import REFERENCE_SET, SET_NAME_RE, manifest_sets, read_manifest
from ._sources import (
    DEFAULT_BASE_URL, RELEASE_ARCHES, DirectorySource, RenamedSource, check_set_version, default_checksum,
    download_tarball, host_arch, normalize_version, open_local_tarball, release_url,
)


ARGUMENT_SPEC = ArgumentSpec({
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "plugin_set": {"type": "str", "default": REFERENCE_SET},
    "rename": {"type": "dict"},
    "version": {"type": "str"},
    "arch": {"type": "str", "choices": list(RELEASE_ARCHES)},
    "dest": {"type": "path"},
    "base_url": {"type": "str", "default": DEFAULT_BASE_URL},
    "url": {"type": "str"},
    "src": {"type": "path"},
    "src_dir": {"type": "path"},
    "checksum": {"type": "str"},
    "plugins": {"type": "list", "elements": "str"},
    "force": {"type": "bool", "default": False},
    "adopt_foreign": {"type": "list", "elements": "str"},
    "validate_certs": {"type": "bool", "default": True},
    "use_proxy": {"type": "bool", "default": True},
    "url_username": {"type": "str"},
    "url_password": {"type": "str", "no_log": True},
    "force_basic_auth": {"type": "bool", "default": False},
}, mutually_exclusive=(("url", "src", "src_dir"),))


def _default(option: str):
    """The default ``ARGUMENT_SPEC`` gives the option, so that the spec is its one home."""
    return ARGUMENT_SPEC.all_options()[option].get("default")


@dataclass(frozen=True)
class Options:
    """The options of ``ARGUMENT_SPEC`` the installer reads, already type-checked by Ansible, under
    their option names (lists as tuples), with its defaults; and ``machine``, the managed host's
    ``platform.machine()``. ``dest`` comes resolved against ``cni_path``."""

    state: str = _default("state")
    dest: str = DEFAULT_CNI_PATH[0]
    version: str | None = None
    arch: str | None = None          # None: from machine
    machine: str = ""
    base_url: str = _default("base_url")
    url: str | None = None
    src: str | None = None
    src_dir: str | None = None
    checksum: str | None = None
    plugins: tuple | None = None
    force: bool = _default("force")
    timeout: float = _default("timeout")  # of each VERSION probe
    plugin_set: str = _default("plugin_set")
    rename: dict | None = None       # {source member: installed name}
    adopt_foreign: tuple = ()        # binaries no set installed that the set may take over

    @classmethod
    def from_params(cls, params: dict, dest: str, machine: str) -> Options:
        """The options ``params`` gives (an option left unset takes the field's default)."""
        given = {name: tuple(params[name]) if isinstance(params[name], list) else params[name]
                 for name in _OPTION_FIELDS if params[name] is not None}
        return cls(**dict(given, dest=dest, machine=machine))


# The fields of Options that are options of ARGUMENT_SPEC, taken from the parameters by name.
_OPTION_FIELDS = tuple(f.name for f in fields(Options) if f.name in ARGUMENT_SPEC.all_options())


def ensure(opts: Options, fetch, workdir: str, check_mode: bool, limits: Limits = Limits()) -> dict:
    """Bring ``opts.dest`` to the requested state. ``fetch(url)`` returns a readable response.
    Downloads and unpacked tarballs live in ``workdir``, never in dest, so check mode can
    compare exactly without writing there."""
    dest = os.path.abspath(opts.dest)
    plugins = _check_plugins(opts.plugins)
    adopt = _check_adopt(opts.adopt_foreign)
    _check_set(opts)
    if os.path.lexists(dest) and not os.path.isdir(dest):
        raise ConfigError("dest", "exists and is not a directory", opts.dest)
    manifest = read_manifest(dest) if os.path.isdir(dest) else None
    memo = BinaryMemo(dest)
    executor = PluginExecutor([dest], opts.timeout)
    if opts.state == "absent":
        plan = plan_absent(dest, manifest, opts.plugin_set, plugins)
        return _carry_out(plan, None, check_mode, executor, memo)
    fetch = RedirectRecorder(fetch)
    with tempfile.TemporaryDirectory(prefix="cnikit-install-", dir=workdir) as work:
        request, source = _resolve(opts, plugins, manifest, dest, fetch, work, limits, memo)
        if source is None:
            # Current as the manifest records it: the set's binaries are the source's.
            check_adopt_names(opts.plugin_set, adopt, manifest_sets(manifest)[opts.plugin_set]["files"])
            plan = plan_unchanged(dest, opts.plugin_set, manifest)
        else:
            plan = plan_present(dest, manifest, request, source, memo, opts.force, adopt)
        result = _carry_out(plan, source, check_mode, executor, memo)
    # Only a run that downloads (or, in check mode, would) exposes the install: a converged run
    # repeats no warning about a mirror it does not reach.
    warning = source is not None and request.checksum and \
        cleartext_warning(request.source, request.checksum, fetch.arrived_from)
    result["warnings"] += [warning] if warning else []
    return result


def _check_plugins(plugins: tuple | None) -> tuple | None:
    if plugins is None:
        return None
    bad = [name for name in plugins if not is_plugin_name(name)]
    if bad:
        raise ConfigError("plugins", "entries must be plugin binary names such as bridge or host-local", bad)
    if not plugins:
        raise ConfigError("plugins", "must name at least one plugin; use state=absent to remove them all", [])
    return tuple(sorted(set(plugins)))


def _check_adopt(names: tuple) -> tuple:
    bad = [name for name in names if not is_plugin_name(name)]
    if bad:
        raise ConfigError("adopt_foreign", "entries must be plugin binary names such as bridge or calico", bad)
    return tuple(sorted(set(names)))


def _check_set(opts: Options) -> None:
    """The set's name, the renames, and, for a set other than the reference release, a source of
    its own: base_url has the reference release's layout."""
    if not isinstance(opts.plugin_set, str) or not SET_NAME_RE.match(opts.plugin_set):
        raise ConfigError("plugin_set", "must be a name such as reference or flannel (lower-case letters, digits, "
                          "'.', '_' and '-', at most 64)", opts.plugin_set)
    if opts.rename is not None and not all(
            is_plugin_file_name(member) and is_plugin_name(name)
            for member, name in opts.rename.items()):
        raise ConfigError("rename", "must map member names to plugin binary names, such as {flannel-amd64: flannel}",
                          opts.rename)
    if opts.state == "present" and opts.plugin_set != REFERENCE_SET and not (opts.url or opts.src or opts.src_dir):
        raise ConfigError("plugin_set", f"set {opts.plugin_set} needs url, src or src_dir: base_url has the layout of "
                          f"the reference release only (set {REFERENCE_SET})", opts.plugin_set)


def _set_version(opts: Options) -> str | None:
    """The reference release's version is a release version, which the validator relies on;
    another set's version is whatever its project calls it."""
    if opts.version is None:
        return None
    return normalize_version(opts.version) if opts.plugin_set == REFERENCE_SET else check_set_version(opts.version)


def _resolve(opts: Options, plugins: tuple | None, manifest: dict | None, dest: str, fetch, work: str,
             limits: Limits, memo: BinaryMemo) -> tuple:
    """The request and its opened source; no source when the manifest already records this very
    download, intact: a re-run fetches nothing."""
    checksum = parse_checksum(opts.checksum) if opts.checksum else None
    version = _set_version(opts)
    rename = dict(opts.rename) if opts.rename else None
    if opts.src_dir or opts.src:
        if opts.src_dir and checksum:
            raise ConfigError("checksum", "applies to tarballs; src_dir is a directory", opts.checksum)
        source = DirectorySource(os.path.abspath(opts.src_dir), memo) if opts.src_dir \
            else open_local_tarball(opts.src, checksum, fetch, work, limits)
        # A local source need not say its version: its content digest stands for it.
        version = version or "sha256:" + source.identity["sha256"]
        return Request(source.what, version, plugins, set_name=opts.plugin_set, rename=rename), _renamed(source, rename)
    if version is None:
        raise ConfigError("version", "is required to install from a release URL (base_url or url)")
    url = opts.url or release_url(opts.base_url, version, _release_arch(opts))
    checksum = checksum or default_checksum(url)
    request = Request(mask_url(url), version, plugins, checksum, opts.plugin_set, rename)
    if not opts.force and manifest_is_current(manifest, request, dest, memo):
        return request, None
    return request, _renamed(download_tarball(url, checksum, fetch, work, limits), rename)


def _renamed(source, rename: dict | None):
    return RenamedSource(source, rename) if rename else source


def _release_arch(opts: Options) -> str:
    arch = opts.arch or host_arch(opts.machine)
    if arch not in RELEASE_ARCHES:
        raise ConfigError("arch", "must be one of " + ", ".join(RELEASE_ARCHES), arch)
    return arch


def _carry_out(plan: Plan, source, check_mode: bool, executor: PluginExecutor, memo: BinaryMemo) -> dict:
    versions = {}
    if plan.changed and not check_mode:
        try:
            versions = apply(plan, source, executor, memo)
        except OSError as exc:
            raise ReleaseError(f"cannot install into {plan.dest}: {exc}") from exc
    result = plan_result(plan, versions, check_mode, bool(source and source.downloaded), executor, memo)
    if not check_mode:
        _remember(memo, plan)
    return result


def _remember(memo: BinaryMemo, plan: Plan) -> None:
    """Keep what this run learnt about the binaries, or drop the memo with the last of them. A
    memo that cannot be written (a read-only dest that is already converged) costs the next run
    the hashing, nothing else."""
    try:
        if plan.new_manifest is None:
            memo.discard()
        else:
            memo.forget_missing()
            memo.save()
    except OSError:
        pass
