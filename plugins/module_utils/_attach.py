# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The attach service: make "namespace X is attached to network N on ifname" true, and say
what it took: added, unchanged, repaired, replaced, deleted or absent. Many attachments are
converged in one call with bounded parallelism."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from . import _cache
from ._conflist import NetworkList
from ._engine import CHECK_MIN_VERSION, Attachment, Engine
from ._errors import CNIError, ConfigError
from ._result import convert, summarise, supports

ADDED, UNCHANGED, REPAIRED, REPLACED, DELETED, ABSENT = "added", "unchanged", "repaired", "replaced", "deleted", "absent"


@dataclass
class Desired:
    """One attachment as declared. ``load_network`` is called only when the network's
    configuration is needed, so that ``absent`` works from the cache after the network's
    file is gone."""

    network_name: str
    load_network: Callable[[], NetworkList]
    attachment: Attachment
    state: str = "present"
    run_check: bool = True

    def key(self) -> tuple:
        return (self.network_name, self.attachment.container_id, self.attachment.ifname)


@dataclass
class Outcome:
    action: str
    result: dict | None = None
    warnings: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.action not in (UNCHANGED, ABSENT)


def converge(engine: Engine, desired: Desired, check_mode: bool = False) -> Outcome:
    """Bring one attachment to its declared state (or, in check mode, say what that takes)."""
    if desired.state == "absent":
        return _converge_absent(engine, desired, check_mode)
    return _converge_present(engine, desired, check_mode)


def _cached(engine: Engine, desired: Desired) -> tuple:
    """The usable cache entry (or None) and whether an unusable one is in the way."""
    try:
        return engine.cached_entry(desired.network_name, desired.attachment), False
    except _cache.CacheError:
        return None, True


def _matches(entry: _cache.CacheEntry, network: NetworkList, attachment: Attachment) -> bool:
    """Whether the cached ADD was made with the configuration and arguments declared now."""
    try:
        cached_config = json.loads(entry.config)
    except ValueError:
        return False
    return (cached_config == network.raw and entry.netns == attachment.netns
            and entry.cni_args == attachment.cni_args and entry.capability_args == attachment.capability_args)


def _health(engine: Engine, network: NetworkList, desired: Desired) -> tuple:
    """(healthy, warnings) of an attachment whose cache entry matches the declaration."""
    if not os.path.exists(desired.attachment.netns):
        return False, [f"network namespace {desired.attachment.netns} is gone"]
    if not desired.run_check or network.disable_check or not supports(engine.version_of(network), CHECK_MIN_VERSION):
        return True, []
    try:
        report = engine.check(network, desired.attachment)
    except CNIError as exc:
        return False, [f"CHECK failed, repairing: {exc}"]
    return True, report.warnings


def _converge_present(engine: Engine, desired: Desired, check_mode: bool) -> Outcome:
    network = desired.load_network()
    entry, unusable = _cached(engine, desired)
    warnings = []
    if unusable or (entry is not None and (entry.config is None or entry.result is None)):
        action = REPAIRED
    elif entry is None:
        action = REPAIRED if engine.interrupted(network.name, desired.attachment) else ADDED
    elif not _matches(entry, network, desired.attachment):
        action = REPLACED
    else:
        healthy, warnings = _health(engine, network, desired)
        if healthy:
            if not check_mode and engine.interrupted(network.name, desired.attachment):
                engine.clear_finished_intent(network.name, desired.attachment)
            return Outcome(UNCHANGED, convert(entry.result, engine.version_of(network)), warnings)
        action = REPAIRED
    if check_mode:
        return Outcome(action, warnings=warnings)
    if action == REPLACED:
        engine.delete(engine.cached_network(entry), Attachment.from_cache(entry))
    elif action == REPAIRED:
        engine.delete(network, desired.attachment)
    return Outcome(action, engine.add(network, desired.attachment), warnings)


def _converge_absent(engine: Engine, desired: Desired, check_mode: bool) -> Outcome:
    entry, unusable = _cached(engine, desired)
    if entry is None and not unusable and not engine.interrupted(desired.network_name, desired.attachment):
        return Outcome(ABSENT)
    if check_mode:
        return Outcome(DELETED)
    if entry is not None and entry.config is not None:
        # DEL with what the ADD used: its configuration, netns and arguments.
        engine.delete(engine.cached_network(entry), Attachment.from_cache(entry))
    else:
        engine.delete(desired.load_network(), desired.attachment)
    return Outcome(DELETED)


def converge_all(engine: Engine, desired: list, check_mode: bool = False, parallel: int = 4) -> list:
    """Converge many attachments, ``parallel`` at a time. Each item's Outcome, or the CNIError
    that stopped it, in the order given; one failure does not stop the others."""
    seen = {}
    for index, item in enumerate(desired):
        if item.key() in seen:
            raise ConfigError(f"attachments[{index}]", f"repeats attachments[{seen[item.key()]}] "
                              "(same network, container_id and ifname)", "/".join(item.key()))
        seen[item.key()] = index

    def run(item: Desired):
        try:
            return converge(engine, item, check_mode)
        except CNIError as exc:
            return exc

    if len(desired) == 1 or parallel <= 1:
        return [run(item) for item in desired]
    with ThreadPoolExecutor(max_workers=min(parallel, len(desired))) as pool:
        return list(pool.map(run, desired))


def describe(desired: Desired, outcome) -> dict:
    """One attachment's return value: identity, action and result, or the error."""
    attachment = desired.attachment
    item = {"network": desired.network_name, "container_id": attachment.container_id,
            "ifname": attachment.ifname, "netns": attachment.netns, "state": desired.state}
    if isinstance(outcome, CNIError):
        item.update(failed=True, changed=False, action="failed", msg=str(outcome), error=outcome.to_dict())
        return item
    item.update(failed=False, changed=outcome.changed, action=outcome.action, warnings=outcome.warnings,
                result=outcome.result)
    item.update(summarise(outcome.result or {}))
    return item
