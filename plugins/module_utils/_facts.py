# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_info's read-only facts: plugins and their versions, networks and their validity,
cached attachments, named namespaces, the host's records of routed networks (cni_info's task is
``_info_task``)."""

from __future__ import annotations

import os
import typing

from . import _netns
from ._cache import UNFINISHED_ADD_CAUSES, ResultCache, left_by_unfinished_add
from ._errors import CNIError
from ._identifiers import NETNS_DIR
from ._result import summarise

if typing.TYPE_CHECKING:  # imported by the subsets that use them: the cache's need none of them
    from ._conflist import ConfDir, NetworkList
    from ._engine import Engine
    from ._exec import Executor


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


def daemon_facts() -> dict:
    """``<plugin type>_daemon``: whether the daemon a plugin needs (the dhcp IPAM plugin's) is up
    on its default socket, for each plugin whose rules say it needs one."""
    from ._plugin_rules.registry import daemon_states  # pylint: disable=import-outside-toplevel  # only cni_info needs it

    return {f"{plugin_type}_daemon": state for plugin_type, state in daemon_states().items()}


class NetworkVerdicts(typing.NamedTuple):
    """Where cni_info recalls the verdicts of its validations (``_verdicts``), and whether it
    keeps new ones: not in check mode, nor where there is no cache directory yet (gathering
    facts makes none)."""

    cache_dir: str
    keep: bool


def network_facts(conf_dir: str, engine: Engine, verdicts: NetworkVerdicts) -> list:
    """Every file of ``conf_dir`` in libcni's order: the network it declares, its validation
    against the plugins installed (as the engine's executor finds them, and the release it says
    they are) and the other networks (remembered: ``verdicts``), and STATUS (1.1.0 and later)."""
    from ._conflist import libcni_order, load_conf_dir  # pylint: disable=import-outside-toplevel  # see TYPE_CHECKING

    loaded = load_conf_dir(conf_dir)
    facts = [_network_fact(network, conf_dir, loaded, engine, verdicts) for network in loaded.networks]
    facts.extend(network_fact(problem.path, _failed(problem.reason)) for problem in loaded.problems)
    return sorted(facts, key=lambda fact: libcni_order(fact["file"]))


def network_fact(file: str, report, network: NetworkList | None = None, cni_version: str | None = None,
                 status: list | None = None) -> dict:
    """cni_info's fact of one file of the conf dir (``networks[]``): the ``network`` it declares
    (None when it cannot be loaded), the version it runs at, its validation ``report`` (a
    ValidationReport) and its plugins' STATUS."""
    return {"name": network.name if network else None, "file": file, "cni_version": cni_version,
            "plugins": [p["type"] for p in network.plugins] if network else [],
            "disable_check": network.disable_check if network else None,
            "disable_gc": network.disable_gc if network else None,
            **report.to_dict(), "valid": report.ok, "status": status}


def _failed(reason: str):
    """A validation report of one error about the whole file."""
    from ._validation.report import ValidationReport  # pylint: disable=import-outside-toplevel  # a file that fails only

    report = ValidationReport()
    report.error("", reason)
    return report


def _network_fact(network: NetworkList, conf_dir: str, loaded: ConfDir, engine: Engine, verdicts: NetworkVerdicts) -> dict:
    try:
        report = _validation(network, conf_dir, loaded, engine.executor, verdicts)
    except CNIError as exc:  # a plugin binary whose VERSION call fails
        report = _failed(str(exc))
    return network_fact(network.source, report, network, _run_version(network, engine), _status(network, engine))


def _validation(network: NetworkList, conf_dir: str, loaded: ConfDir, executor: Executor, verdicts: NetworkVerdicts):
    """The validation report of ``network`` among the others ``loaded`` from ``conf_dir``: the
    verdict remembered from the last validation of its file when it provably holds, else a
    validation, remembered when ``verdicts.keep``."""
    from ._validation.report import ValidationReport  # pylint: disable=import-outside-toplevel  # only the networks subset validates
    from ._verdicts import VerdictCache  # pylint: disable=import-outside-toplevel  # as ValidationReport

    conf = dict(network.raw, plugins=network.plugins)
    report = ValidationReport()

    def validate(asked, host_reads) -> dict:
        from ._validate import validate_network_list  # pylint: disable=import-outside-toplevel  # a remembered verdict needs none of it
        validate_network_list(conf, installed_versions=asked.supported_versions, installed_release=asked.release,
                              other_networks=loaded.networks, source=network.source, report=report,
                              host_reads=host_reads)
        return conf
    VerdictCache(verdicts.cache_dir, conf_dir, network.source, conf, executor, "cni_info").validated(
        report, validate, verdicts.keep)
    return report


def _run_version(network: NetworkList, engine: Engine) -> str:
    """The version the list runs at: with ``cniVersions``, the one chosen (not the possibly
    empty ``cniVersion``)."""
    try:
        return engine.version_of(network)
    except CNIError:
        return network.cni_version


def _status(network: NetworkList, engine: Engine) -> list | None:
    """Each plugin's STATUS, or None where the network's version predates STATUS."""
    from ._engine import PluginStatus  # pylint: disable=import-outside-toplevel  # the engine's; loaded by the caller

    try:
        statuses = engine.status(network)
    except CNIError as exc:
        statuses = [PluginStatus.failed(None, None, str(exc))]
    return None if statuses is None else [status.to_dict() for status in statuses]


def attachment_facts(cache: ResultCache) -> tuple:
    """Every attachment of the result ``cache`` with its addresses and whether its namespace
    still exists, and the messages of the cache files that could not be read."""
    entries, problems = cache.entries()
    facts = []
    for entry in entries:
        summary = summarise(entry.result) if entry.result else {"interfaces": [], "ips": [], "mac": None}
        facts.append(dict(entry.identity(), ips=summary["ips"], mac=summary["mac"],
                          netns_exists=_netns.is_live(entry.effective_netns), cache_file=entry.path))
    unfinished = [f"an ADD did not finish and was not rolled back ({UNFINISHED_ADD_CAUSES}): {left_by_unfinished_add(path)}"
                  for path in cache.unfinished_adds(entries)]
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
