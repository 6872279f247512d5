# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""What the host holds, as cni_netns, cni_gc and cni_info see it: the cached attachments of a
namespace and their removal, garbage collection of attachments whose namespace is gone, and
read-only facts about plugins, networks, attachments and named namespaces."""

from __future__ import annotations

import os

from . import _netns
from ._conflist import CONFLIST_EXTENSIONS, ConfDir, NetworkList, find_network, load_conf_dir
from ._engine import GC_STATUS_MIN_VERSION, Attachment, Engine
from ._errors import CNIError
from ._exec import find_plugin, probe_versions
from ._identifiers import NETNS_DIR, canonical_netns, check_container_id, check_ifname
from ._result import summarise, supports

GATHER_SUBSETS = ("plugins", "networks", "attachments", "namespaces")


def describe(entry) -> dict:
    """An attachment as the modules return it; ``managed`` is false for another runtime's."""
    return {"network": entry.network, "container_id": entry.container_id, "ifname": entry.ifname,
            "netns": entry.effective_netns, "managed": entry.managed}


# -- the attachments of a namespace ---------------------------------------------------------------

def attachments_in_netns(engine: Engine, netns: str) -> list:
    """The cache entries of every attachment made into the namespace at path ``netns``."""
    wanted = canonical_netns(netns)
    entries, _problems = engine.cached_attachments()
    return [e for e in entries if canonical_netns(e.effective_netns) == wanted]


def delete_attachments(engine: Engine, entries: list) -> tuple:
    """DEL each entry with the network config cached at its ADD, trying every one: the entries
    deleted, and the errors of those that were not (their cache entries stay for a retry)."""
    deleted, errors = [], []
    for entry in entries:
        try:
            engine.delete(engine.cached_network(entry), Attachment.from_cache(entry))
        except CNIError as exc:
            errors.append(exc)
            continue
        deleted.append(describe(entry))
    return deleted, errors


# -- garbage collection ---------------------------------------------------------------------------
# GC collects only what this collection made (managed cache entries). Another runtime sharing the
# cache directory collects its own: its entries are left alone in every mode, and are sent to the
# plugins' GC as valid, so that their addresses are never released under a running container.

def netns_exists(entry) -> bool | None:
    """Whether the attachment's namespace exists: None when the entry names none (no evidence
    either way), False only when the named namespace is gone."""
    path = entry.effective_netns
    return _netns.is_netns(path) if path else None


def check_valid_attachments(items: list, path: str = "valid_attachments") -> list:
    """``[{container_id, ifname}, ...]`` as (container ID, ifname) pairs, each part checked."""
    pairs = []
    for index, item in enumerate(items):
        pairs.append((check_container_id(item.get("container_id"), f"{path}[{index}].container_id"),
                      check_ifname(item.get("ifname", "eth0"), f"{path}[{index}].ifname")))
    return pairs


def gc_networks(conf_dir: str, name: str | None) -> tuple:
    """The networks to collect: the one named (first file that declares it, as libcni reads)
    or every network of ``conf_dir``, once per name; and the files that could not be loaded."""
    if name is not None:
        return [find_network(conf_dir, name)], []
    loaded = load_conf_dir(conf_dir)
    first = {}
    for network in loaded.networks:
        first.setdefault(network.name, network)
    return list(first.values()), loaded.problems


def orphaned_networks(engine: Engine, declared: set) -> list:
    """Names of the networks that have cached attachments but are not in ``declared`` (the
    names conf_dir declares): removed from conf_dir while something was attached."""
    entries, _problems = engine.cached_attachments()
    return sorted({entry.network for entry in entries} - declared)


def gc_plan(engine: Engine, network: NetworkList, valid: list | None) -> list:
    """What GC of ``network`` would collect: the attachments this collection made that are
    outside ``valid`` (pairs), or, when ``valid`` is None, those whose namespace is gone."""
    return _stale(engine, network.name, _keep_declared(valid))


def gc_plan_orphaned(engine: Engine, network_name: str, valid: list | None) -> list:
    """What GC of a network of :func:`orphaned_networks` would collect (see :func:`collect_orphaned`)."""
    return _stale(engine, network_name, _keep_orphaned(valid))


def collect(engine: Engine, network: NetworkList, valid: list | None) -> dict:
    """Run GC on ``network``: DEL what :func:`gc_plan` names (judged under the GC lock), then
    GC to 1.1.0 plugins with everything else as valid (nothing with ``disableGC``). Returns the ``collected`` and ``errors``
    lists; an error that stops this network (a plugin not found) is one of the errors, so that
    the caller can go on with other networks."""
    return _reported(network.name, lambda: engine.gc(network, valid or [], keep=_keep_declared(valid)))


def collect_orphaned(engine: Engine, network_name: str, valid: list | None) -> dict:
    """GC of a network of :func:`orphaned_networks`: DEL, with the configuration cached at its
    ADD, each attachment this collection made whose namespace is gone, unless ``valid`` lists it or its cached
    configuration sets ``disableGC``. ``valid`` only protects here: it names the attachments of
    the networks the caller declares, and another runtime may share this cache directory."""
    return _reported(network_name, lambda: engine.gc_orphaned(network_name, keep=_keep_orphaned(valid)))


def left_alone(engine: Engine, network_name: str) -> list:
    """Another runtime's attachments of the network, which GC never collects."""
    entries, _problems = engine.cached_attachments(network_name)
    return [dict(describe(e), netns_exists=netns_exists(e)) for e in entries if not e.managed]


def foreign_left_out(engine: Engine, network_name: str, valid: list | None) -> list:
    """The live attachments of another runtime that an explicit ``valid`` list leaves out: GC
    leaves them alone, and the user is told, since the list may have been meant to name them."""
    if valid is None:
        return []
    keys = set(valid)
    entries, _problems = engine.cached_attachments(network_name)
    return [describe(e) for e in entries
            if not e.managed and (e.container_id, e.ifname) not in keys and netns_exists(e) is not False]


def _keep_declared(valid: list | None):
    keys = set(valid or [])

    def keep(entry) -> bool:
        if not entry.managed:
            return True
        if valid is None:
            return netns_exists(entry) is not False
        return (entry.container_id, entry.ifname) in keys
    return keep


def _keep_orphaned(valid: list | None):
    keys = set(valid or [])

    def keep(entry) -> bool:
        return (not entry.managed or netns_exists(entry) is not False or (entry.container_id, entry.ifname) in keys
                or _opts_out_of_gc(entry))
    return keep


def _opts_out_of_gc(entry) -> bool:
    try:
        return Engine.cached_network(entry).disable_gc
    except CNIError:
        return False  # an unusable cached configuration: the DEL says why


def _stale(engine: Engine, network_name: str, keep) -> list:
    entries, _problems = engine.cached_attachments(network_name)
    return [describe(e) for e in entries if not keep(e)]


def _reported(network_name: str, run_gc) -> dict:
    try:
        report = run_gc()
    except CNIError as exc:
        report = {"deleted": [], "errors": [exc.to_dict()]}
    return {"collected": [dict(item, network=network_name) for item in report["deleted"]],
            "errors": [dict(error, network=network_name) for error in report["errors"]]}


# -- facts ----------------------------------------------------------------------------------------

def plugin_facts(cni_path: list, timeout: float) -> tuple:
    """Every executable along ``cni_path``, in search order: its CNI versions (or the error its
    VERSION call gave), the release version a cnikit manifest records for it, and whether an
    earlier directory shadows it; and the messages of manifests that could not be read."""
    from ._release import read_manifest  # pylint: disable=import-outside-toplevel  # only cni_info needs it

    facts, warnings, seen = [], [], set()
    for directory in cni_path:
        try:
            names = sorted(os.listdir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        try:
            manifest = read_manifest(directory) or {}
        except CNIError as exc:
            manifest = {}
            warnings.append(str(exc))
        for name in names:
            path = os.path.join(directory, name)
            if name.startswith(".") or not os.path.isfile(path) or not os.access(path, os.X_OK):
                continue
            fact = {"name": name, "path": path, "cni_versions": None, "error": None, "shadowed": name in seen,
                    "manifest_version": manifest.get("version") if name in manifest.get("files", {}) else None}
            seen.add(name)
            try:
                fact["cni_versions"] = probe_versions(path, timeout)
            except CNIError as exc:
                fact["error"] = str(exc)
            facts.append(fact)
    return facts, warnings


def network_facts(conf_dir: str, engine: Engine) -> list:
    """Every file of ``conf_dir`` in libcni's order: the network it declares, its validation
    against the installed plugins and the other networks, and STATUS (1.1.0 and later)."""
    loaded = load_conf_dir(conf_dir)
    facts = [_network_fact(network, loaded, engine) for network in loaded.networks]
    facts.extend({"name": None, "file": problem.path, "cni_version": None, "plugins": [], "disable_check": None,
                  "disable_gc": None, "valid": False, "errors": [{"path": "", "message": problem.reason}],
                  "warnings": [], "status": None}
                 for problem in loaded.problems)
    return sorted(facts, key=lambda fact: (not fact["file"].endswith(CONFLIST_EXTENSIONS), fact["file"]))


def _network_fact(network: NetworkList, loaded: ConfDir, engine: Engine) -> dict:
    fact = {"name": network.name, "file": network.source, "cni_version": network.cni_version,
            "plugins": [p["type"] for p in network.plugins], "disable_check": network.disable_check,
            "disable_gc": network.disable_gc}

    from ._validate import validate_network_list  # pylint: disable=import-outside-toplevel  # only cni_info needs it

    def installed_versions(plugin_type: str) -> list:
        return probe_versions(find_plugin(plugin_type, engine.cni_path), engine.timeout)

    try:
        report = validate_network_list(dict(network.raw, plugins=network.plugins), installed_versions=installed_versions,
                                       other_networks=loaded.networks, source=network.source).to_dict()
    except CNIError as exc:  # a plugin binary whose VERSION call fails
        report = {"errors": [{"path": "", "message": str(exc)}], "warnings": []}
    fact.update(report, valid=not report["errors"], status=_status(network, engine))
    return fact


def _status(network: NetworkList, engine: Engine) -> list | None:
    """Each plugin's STATUS, or None where the network's version predates STATUS."""
    try:
        if not supports(engine.version_of(network), GC_STATUS_MIN_VERSION):
            return None
        return engine.status(network)
    except CNIError as exc:
        return [{"plugin": None, "ready": False, "state": "error", "code": None, "msg": str(exc)}]


def attachment_facts(engine: Engine) -> tuple:
    """Every cached attachment with its addresses and whether its namespace still exists, and
    the messages of the cache files that could not be read."""
    entries, problems = engine.cached_attachments()
    facts = []
    for entry in entries:
        summary = summarise(entry.result) if entry.result else {"interfaces": [], "ips": [], "mac": None}
        facts.append(dict(describe(entry), ips=summary["ips"], mac=summary["mac"],
                          netns_exists=netns_exists(entry), cache_file=entry.path))
    return facts, [str(p) for p in problems]


def namespace_facts() -> list:
    return [{"name": name, "path": os.path.join(NETNS_DIR, name)} for name in _netns.list_named()]
