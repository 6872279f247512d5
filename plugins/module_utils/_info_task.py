# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_info's task: its options (ARGUMENT_SPEC) and run, gathering the facts ``_facts`` reads."""

from __future__ import annotations

import os

from ._argspec import ArgumentSpec
from ._cache import ResultCache
from ._cache_dir import warn_of_cache_dir
from ._facts import (NetworkVerdicts, attachment_facts, cluster_facts, daemon_facts, namespace_facts, network_facts,
                     plugin_facts)


GATHER_SUBSETS = ("plugins", "networks", "attachments", "namespaces", "clusters")


ARGUMENT_SPEC = ArgumentSpec({
    "gather": {"type": "list", "elements": "str", "choices": list(GATHER_SUBSETS), "default": list(GATHER_SUBSETS)},
})


def run(host, params: dict, result: dict) -> None:
    """Gather the subsets ``params["gather"]`` names; ``host`` is the module's
    ``_ansible_glue.ModuleHost``."""
    gather = set(params["gather"])
    if "networks" in gather:
        host.require_libraries("jsonschema")
    facts = {"changed": False}
    warnings = []
    executor = _executor(host, params) if gather & {"plugins", "networks"} else None
    if "plugins" in gather:
        facts["plugins"], problems = plugin_facts(executor)
        facts.update(daemon_facts())
        warnings.extend(problems)
    if "networks" in gather:
        from ._engine import Engine  # pylint: disable=import-outside-toplevel  # the subsets of the cache need no engine

        engine = Engine(params["cni_path"], params["cache_dir"], params["timeout"], executor=executor)
        verdicts = NetworkVerdicts(params["cache_dir"], keep=not host.check_mode and os.path.isdir(params["cache_dir"]))
        facts["networks"] = network_facts(params["conf_dir"], engine, verdicts)
    if "attachments" in gather:
        warn_of_cache_dir(host, params["cache_dir"])
        facts["attachments"], problems = attachment_facts(ResultCache(params["cache_dir"]))
        warnings.extend(problems)
    if "namespaces" in gather:
        facts["namespaces"] = namespace_facts()
    if "clusters" in gather:
        facts["clusters"], problems = cluster_facts(params["cache_dir"])
        warnings.extend(problems)
    for warning in warnings:
        host.warn(warning)
    result.update(facts)


def _executor(host, params: dict):
    """The plugin runner the plugins and networks subsets ask (imported only for them)."""
    from ._exec import PluginExecutor  # pylint: disable=import-outside-toplevel  # the subsets of the cache run no plugin

    return PluginExecutor(params["cni_path"], params["timeout"], host.run_command)
