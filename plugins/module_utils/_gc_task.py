# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_gc's task: its options (ARGUMENT_SPEC) and run, collecting with ``_gc``."""

from __future__ import annotations

from ._argspec import ArgumentSpec
from ._cache import CacheListing
from ._cache_dir import warn_of_cache_dir
from ._conflist import NetworkList
from ._defaults import DEFAULT_IFNAME
from ._engine import VERB_INTRODUCED_IN, Engine
from ._gc import (
    collect, collect_orphaned, foreign_left_out, gc_networks, gc_plan, gc_plan_orphaned, left_alone,
    orphaned_networks, unusable_elsewhere, unusable_entries, valid_attachment_keys,
)


ARGUMENT_SPEC = ArgumentSpec({
    "network": {"type": "str"},
    "valid_attachments": {"type": "list", "elements": "dict", "options": {
        "container_id": {"type": "str", "required": True},
        "ifname": {"type": "str", "default": DEFAULT_IFNAME},
    }},
})


def run(host, params: dict, result: dict) -> None:
    """cni_gc: collect the networks of ``conf_dir`` (or the one named) and, without a name, the
    networks it no longer declares; ``host`` is the module's ``_ansible_glue.ModuleHost``."""
    engine = Engine(params["cni_path"], params["cache_dir"], params["timeout"])
    warn_of_cache_dir(host, params["cache_dir"])
    result.update({"changed": False, "collected": [], "errors": [], "skipped_networks": [], "orphaned_networks": [],
                   "left_alone": [], "unusable_entries": []})
    valid = None
    if params["valid_attachments"] is not None:
        valid = valid_attachment_keys(params["valid_attachments"])
    networks, problems = gc_networks(params["conf_dir"], params["network"])
    listing = engine.cache.entries()
    for problem in problems:
        host.warn(f"cannot load {problem.path}: {problem.reason}; the networks it declares are collected as "
                  "networks conf_dir no longer declares (orphaned_networks)")
    for network in networks:
        if network.disable_gc:
            result["skipped_networks"].append(network.name)
            _report_unusable(host, result, unusable_entries(listing, network.name), f"network {network.name}: ",
                             "left alone: the network sets disableGC")
            continue
        _examine(host, engine, listing, network, valid, result)
        if host.check_mode:
            result["collected"].extend(gc_plan(listing, network, valid))
        else:
            _add_report(result, collect(engine, network, valid))
    if params["network"] is None:
        _collect_undeclared(host, engine, listing, {n.name for n in networks}, valid, result)
    result["changed"] = bool(result["collected"])
    if result["errors"]:
        host.fail(f"garbage collection had {len(result['errors'])} errors; first: {result['errors'][0]['msg']}", **result)


def _collect_undeclared(host, engine: Engine, listing: CacheListing, declared: set, valid: list | None,
                        result: dict) -> None:
    """What conf_dir does not declare: the networks it no longer declares, collected from their
    cache entries, and the unreadable cache files of no network examined, both told by the task's
    read of the cache directory (GC of the declared networks touches neither the entries of other
    networks nor an unreadable file, so the read stays true)."""
    result["orphaned_networks"] = orphaned_networks(listing.entries, declared)
    for name in result["orphaned_networks"]:
        result["left_alone"].extend(left_alone(listing, name))
        _report_unusable(host, result, unusable_entries(listing, name), f"network {name}: ",
                         "left alone (conf_dir no longer declares its network: no GC is sent for it)")
        if host.check_mode:
            result["collected"].extend(gc_plan_orphaned(listing, name, valid))
        else:
            _add_report(result, collect_orphaned(engine, name, valid))
    _report_unusable(host, result, unusable_elsewhere(listing.problems, result["unusable_entries"]), "",
                     "left alone: no network conf_dir declares is its own")


def _report_unusable(host, result: dict, items: list, about: str, fate: str) -> None:
    for item in items:
        result["unusable_entries"].append(item)
        host.warn(f"{about}cannot read the cache entry {item['file']} ({item['reason']}); it is {fate}")


def _add_report(result: dict, report: dict) -> None:
    result["collected"].extend(report["collected"])
    result["errors"].extend(report["errors"])


def _examine(host, engine: Engine, listing: CacheListing, network: NetworkList, valid: list | None,
             result: dict) -> None:
    """Note another runtime's attachments of the network, warning of the live ones that an
    explicit ``valid_attachments`` leaves out, before anything is collected."""
    network_name = network.name
    result["left_alone"].extend(left_alone(listing, network_name))
    if engine.available(network, "GC"):
        fate = "left alone and sent to the plugins' GC as valid, since it may be a running container's"
    else:
        fate = (f"left alone, since it may be a running container's (no GC is sent to its plugins: cniVersion "
                f"{engine.version_of(network)} has no GC ({VERB_INTRODUCED_IN['GC']} brought it))")
    _report_unusable(host, result, unusable_entries(listing, network_name), f"network {network_name}: ", fate)
    for item in foreign_left_out(listing, network_name, valid):
        host.warn(f"network {network_name}: valid_attachments leaves out container ID {item['container_id']} "
                  f"({item['ifname']} in {item['netns'] or 'an unnamed namespace'}), which another runtime made "
                  "and which is live; it is left alone. Detach it with cni_attach state=absent if it must go")
