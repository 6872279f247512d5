# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_info's read-only facts: plugins and their versions, networks and their validity,
cached attachments, named namespaces, the host's records of routed networks; and its task
(ARGUMENT_SPEC and run), gathering them."""

from __future__ import annotations

import os

from . import _netns
from ._attach_records import UNFINISHED_ADD_CAUSES, left_by_unfinished_add, unfinished_adds
from ._argspec import ArgumentSpec
from ._cache import warn_of_cache_dir
from ._conflist import ConfDir, NetworkList, libcni_order, load_conf_dir
from ._engine import Engine
from ._errors import CNIError
from ._exec import Executor, PluginExecutor
from ._identifiers import NETNS_DIR
from ._result import summarise

GATHER_SUBSETS = ("plugins", "networks", "attachments", "namespaces", "clusters")


def plugin_facts(executor: Executor) -> tuple:
    """Every executable along the executor's ``cni_path``, in search order: its CNI versions (or
    the error its VERSION call gave), the plugin set a cnikit manifest records it in and that
    set's version, the release the executor says it is, and whether an earlier directory
    shadows it; and the messages of manifests that could not be read."""
    facts, warnings, seen = [], [], set()
    for directory in executor.cni_path:
        try:
            names = sorted(os.listdir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        problem = executor.manifest_problem(directory)
        if problem is not None:
            warnings.append(problem)
        for name in names:
            path = os.path.join(directory, name)
            if name.startswith(".") or not os.path.isfile(path) or not os.access(path, os.X_OK):
                continue
            set_name, plugin_set = executor.installed_set(path)
            fact = {"name": name, "path": path, "cni_versions": None, "error": None, "shadowed": name in seen,
                    "set": set_name, "manifest_version": plugin_set.get("version") if plugin_set else None,
                    "release": executor.binary_release(path)}
            seen.add(name)
            try:
                fact["cni_versions"] = executor.binary_versions(path)
            except CNIError as exc:
                fact["error"] = str(exc)
            facts.append(fact)
    return facts, warnings


def dhcp_daemon_fact() -> dict:
    """Whether the dhcp IPAM plugin's daemon is up on its default socket."""
    from ._plugin_rules.dhcp import daemon_state  # pylint: disable=import-outside-toplevel  # only cni_info needs it

    return daemon_state()


def network_facts(conf_dir: str, engine: Engine) -> list:
    """Every file of ``conf_dir`` in libcni's order: the network it declares, its validation
    against the plugins installed (as the engine's executor finds them, and the release it says
    they are) and the other networks, and STATUS (1.1.0 and later)."""
    loaded = load_conf_dir(conf_dir)
    facts = [_network_fact(network, loaded, engine) for network in loaded.networks]
    facts.extend({"name": None, "file": problem.path, "cni_version": None, "plugins": [], "disable_check": None,
                  "disable_gc": None, "valid": False, "errors": [{"path": "", "message": problem.reason}],
                  "warnings": [], "status": None}
                 for problem in loaded.problems)
    return sorted(facts, key=lambda fact: libcni_order(fact["file"]))


def _network_fact(network: NetworkList, loaded: ConfDir, engine: Engine) -> dict:
    fact = {"name": network.name, "file": network.source, "cni_version": _run_version(network, engine),
            "plugins": [p["type"] for p in network.plugins], "disable_check": network.disable_check,
            "disable_gc": network.disable_gc}

    from ._validate import validate_network_list  # pylint: disable=import-outside-toplevel  # only cni_info needs it

    try:
        report = validate_network_list(dict(network.raw, plugins=network.plugins),
                                       installed_versions=engine.executor.supported_versions,
                                       installed_release=engine.executor.release,
                                       other_networks=loaded.networks, source=network.source).to_dict()
    except CNIError as exc:  # a plugin binary whose VERSION call fails
        report = {"errors": [{"path": "", "message": str(exc)}], "warnings": []}
    fact.update(report, valid=not report["errors"], status=_status(network, engine))
    return fact


def _run_version(network: NetworkList, engine: Engine) -> str:
    """The version the list runs at: with ``cniVersions``, the one chosen (not the possibly
    empty ``cniVersion``)."""
    try:
        return engine.version_of(network)
    except CNIError:
        return network.cni_version


def _status(network: NetworkList, engine: Engine) -> list | None:
    """Each plugin's STATUS, or None where the network's version predates STATUS."""
    try:
        if not engine.available(network, "STATUS"):
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
        facts.append(dict(entry.identity(), ips=summary["ips"], mac=summary["mac"],
                          netns_exists=_netns.is_live(entry.effective_netns), cache_file=entry.path))
    unfinished = [f"an ADD did not finish and was not rolled back ({UNFINISHED_ADD_CAUSES}): "
                  + left_by_unfinished_add(path) for path in unfinished_adds(engine, entries)]
    return facts, [str(p) for p in problems] + unfinished


def namespace_facts() -> list:
    return [{"name": name, "path": os.path.join(NETNS_DIR, name)} for name in _netns.list_named()]


def cluster_facts(cache_dir: str) -> tuple:
    """The host's records of the routed networks it is a member of (cni_cluster_member's), by
    network, each with its file and ``error`` null; a record that cannot be read is there with
    its fields null and the reason in ``error``, and in the messages returned with them."""
    from . import _cluster_member  # pylint: disable=import-outside-toplevel  # only the clusters subset reads records
    records, problems = _cluster_member.read_records(cache_dir)
    facts = {network: dict(record, path=_cluster_member.record_path(cache_dir, network), error=None)
             for network, record in records.items()}
    for network, problem in problems.items():
        facts[network] = dict(dict.fromkeys(_cluster_member.RECORD_FIELDS), network=network, path=problem.path,
                              error=str(problem))
    return dict(sorted(facts.items())), [str(problem) for problem in problems.values()]


# -- cni_info's task ------------------------------------------------------------------------------

ARGUMENT_SPEC = ArgumentSpec({
    "gather": {"type": "list", "elements": "str", "choices": list(GATHER_SUBSETS), "default": list(GATHER_SUBSETS)},
})


def run(host, params: dict, result: dict) -> None:
    """Gather the subsets ``params["gather"]`` names; ``host`` is the module's
    ``_ansible_glue.ModuleHost``."""
    if "networks" in params["gather"]:
        host.require_libraries("jsonschema")
    executor = PluginExecutor(params["cni_path"], params["timeout"], host.run_command)
    engine = Engine(params["cni_path"], params["cache_dir"], params["timeout"], executor=executor)
    gather = set(params["gather"])
    facts = {"changed": False}
    warnings = []
    if "plugins" in gather:
        facts["plugins"], problems = plugin_facts(executor)
        facts["dhcp_daemon"] = dhcp_daemon_fact()
        warnings.extend(problems)
    if "networks" in gather:
        facts["networks"] = network_facts(params["conf_dir"], engine)
    if "attachments" in gather:
        warn_of_cache_dir(host, params["cache_dir"])
        facts["attachments"], problems = attachment_facts(engine)
        warnings.extend(problems)
    if "namespaces" in gather:
        facts["namespaces"] = namespace_facts()
    if "clusters" in gather:
        facts["clusters"], problems = cluster_facts(params["cache_dir"])
        warnings.extend(problems)
    for warning in warnings:
        host.warn(warning)
    result.update(facts)
