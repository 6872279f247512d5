# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The attach service: make "namespace X is attached to network N on ifname" true, and say
what it took: added, unchanged, repaired, replaced, deleted or absent. Many attachments are
converged in one call with bounded parallelism.

It does no harm to what it did not make: an attachment another runtime cached at the declared
key is verified, never repaired or replaced; a repair asks the IPAM for the address the
attachment had, and says when it got another one.

Its own records live in the engine's cache (``Engine.cache``): whether an ADD was interrupted
(its intent marker outlived it), and which tolerated CHECK defects an attachment has already
been warned of. The engine's verbs write and clear the markers; what they mean for an
attachment is decided here."""

from __future__ import annotations

import dataclasses
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from ._cache import UNFINISHED_ADD_CAUSES, CacheEntry, CacheError, left_by_unfinished_add
from ._conflist import NetworkList
from ._engine import Attachment, Engine, NotInPlaceError, network_at_add, plugin_rules, refuse_taken_ifname
from ._errors import CNIError, ConfigError, DeleteError, OperationError
from ._identifiers import AttachmentKey, canonical_netns, netns_name
from ._result import convert, summarise
from ._wording import first_few

ADDED, UNCHANGED, REPAIRED, REPLACED, DELETED, ABSENT = "added", "unchanged", "repaired", "replaced", "deleted", "absent"
MADE_ANEW = (REPAIRED, REPLACED)  # attached before and after, with a DEL and an ADD between
ATTACHED_BEFORE = (REPAIRED, REPLACED, DELETED)  # of the actions that change something


@dataclass
class Desired:
    """One attachment as declared. ``load_network`` is called only when the network's
    configuration is needed, so that ``absent`` works from the cache after the network's
    file is gone."""

    load_network: Callable[[], NetworkList]
    attachment: Attachment
    state: str = "present"
    run_check: bool = True
    netns_created: bool = False  # the run created the namespace: nothing cached before can be in it

    @property
    def network_name(self) -> str:
        return self.attachment.network

    @property
    def key(self) -> AttachmentKey:
        return self.attachment.key


class ForeignAttachmentError(CNIError):
    """The declared attachment exists, made by another runtime, and differs or fails CHECK."""


class UnusableEntryError(CNIError):
    """The declared attachment's cache entry cannot be read as one of ours (empty, cut short,
    libcni's legacy format): it may be a running container's, so it is never repaired."""


@dataclass
class Outcome:
    action: str
    result: dict | None = None
    warnings: list = field(default_factory=list)
    previous_ips: list = field(default_factory=list)  # the addresses a repaired/replaced attachment had
    # what is said of a standing condition many attachments share (a CHECK withheld on a plugin
    # release), which the task says once, however many attachments it holds for
    notices: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.action not in (UNCHANGED, ABSENT)


def converge(engine: Engine, desired: Desired, check_mode: bool = False) -> Outcome:
    """Bring one attachment to its declared state (or, in check mode, say what that takes)."""
    if desired.state == "absent":
        return _converge_absent(engine, desired, check_mode)
    return _converge_present(engine, desired, check_mode)


def _cached(engine: Engine, desired: Desired) -> tuple:
    """The usable cache entry (or None) and the CacheError of an unusable one in the way (or None)."""
    try:
        return engine.cache.read(desired.key), None
    except CacheError as exc:
        return None, exc


def _interrupted(engine: Engine, desired: Desired) -> bool:
    """True when an ADD of this attachment was started and never finished nor rolled back."""
    return engine.cache.is_pending(desired.key)


def _clear_finished_intent(engine: Engine, desired: Desired) -> None:
    """Remove the intent marker of an ADD that did finish: a kill between writing the cache
    entry (the ADD's last step) and removing the marker leaves both, and the complete entry
    proves the ADD done."""
    with engine.cache.lock(desired.key):
        try:
            entry = engine.cache.read(desired.key)
        except CacheError:
            return
        if entry is not None and entry.config is not None and entry.result is not None:
            engine.cache.clear_pending(desired.key)


def _record_reported_defects(engine: Engine, desired: Desired, names: list) -> None:
    """Remember in our cache entry that these tolerated defects were reported, so that they
    are reported once per attachment, not on every run."""
    with engine.cache.lock(desired.key):
        entry = engine.cache.read(desired.key)
        if entry is not None and entry.managed:
            entry.reported_defects = sorted(set(entry.reported_defects) | set(names))
            engine.cache.write(entry)


def _refuse_unusable(desired: Desired, path: str, reason: str) -> None:
    attachment = desired.attachment
    raise UnusableEntryError(
        f"the cache entry of network {desired.network_name}, container ID {attachment.container_id}, ifname "
        f"{attachment.ifname} ({path}) {reason}; it may belong to a running container of another runtime (one that "
        "crashed while writing it), so cnikit neither repairs nor replaces it. Detach it with state=absent, or "
        "with the runtime that made it, first")


def _matches(entry: CacheEntry, network: NetworkList, attachment: Attachment) -> bool:
    """Whether the cached ADD was made with the configuration and arguments declared now."""
    try:
        cached_config = json.loads(entry.config)
    except ValueError:
        return False
    if cached_config != network.raw or entry.capability_args != attachment.capability_args:
        return False
    if canonical_netns(entry.effective_netns) != attachment.canonical_netns:
        return False
    return _same_args(entry.cni_args, attachment.cni_args)


def _same_args(cached: list, declared: list) -> bool:
    """CNI_ARGS compared as a mapping: containerd caches them in Go's random map order. (Sorted
    pairs, so that a key given twice still counts.)"""
    try:
        return sorted(map(tuple, cached)) == sorted(map(tuple, declared))
    except TypeError:  # a foreign entry with pairs that are not lists of strings
        return cached == declared


def _health(engine: Engine, network: NetworkList, desired: Desired, entry: CacheEntry,
            check_mode: bool) -> tuple:
    """(healthy, warnings, notices) of an attachment whose cache entry matches the declaration.
    Known plugin defects that CHECK meets are reported once per attachment: the names of those
    reported are kept in our cache entry, by the first real run (check mode, which cannot
    record them, leaves them to it, so they are not reported twice). A CHECK withheld for a
    defect of the installed release is a notice, which the task gives once."""
    if not os.path.exists(desired.attachment.netns):
        return False, [f"network namespace {desired.attachment.netns} is gone"], []
    if desired.netns_created:  # CHECK may not look into it: none below 0.4.0, flannel's checks nothing
        return False, [f"network namespace {desired.attachment.netns} was gone and has been created anew"], []
    if not desired.run_check or network.disable_check or not engine.available(network, "CHECK"):
        return True, [], []
    try:
        report = engine.check(network, desired.attachment)
    except NotInPlaceError as exc:
        return False, [f"not in place (verified without CHECK, which is withheld here): {exc}"], []
    except CNIError as exc:
        return False, [f"CHECK failed: {exc}"], []
    notices = [f"{notice} (run_check: false silences this)" for notice in report.withheld.values()]
    new = {name: message for name, message in report.tolerated.items() if name not in entry.reported_defects}
    if new and entry.managed:
        if check_mode:
            return True, [], notices
        _record_reported_defects(engine, desired, list(new))
    return True, list(new.values()), notices


def _converge_present(engine: Engine, desired: Desired, check_mode: bool) -> Outcome:
    network = desired.load_network()
    entry, unusable = _cached(engine, desired)
    if unusable is not None:
        _refuse_unusable(desired, unusable.path, f"cannot be read ({unusable.reason})")
    if entry is not None and not entry.managed:
        if entry.config is None:
            _refuse_unusable(desired, entry.path, "is in libcni's legacy format, without its configuration")
        return _verify_foreign(engine, network, desired, entry)
    warnings = []
    if entry is not None and entry.result is None:
        action = REPAIRED
    elif entry is None:
        action = REPAIRED if _interrupted(engine, desired) else ADDED
    elif not _matches(entry, network, desired.attachment):
        action = REPLACED
    else:
        healthy, warnings, notices = _health(engine, network, desired, entry, check_mode)
        if healthy:
            if not check_mode and _interrupted(engine, desired):
                _clear_finished_intent(engine, desired)
            return Outcome(UNCHANGED, convert(entry.result, engine.version_of(network)), warnings, notices=notices)
        action = REPAIRED
    previous_ips = _previous_ips(network, desired, entry, action)
    _refuse_what_add_would_refuse(network, desired, action)
    if check_mode:
        if action == ADDED:
            refuse_taken_ifname(engine.cache, network, desired.attachment)  # as the ADD will
        return Outcome(action, warnings=warnings, previous_ips=previous_ips)
    if action == REPLACED:
        return Outcome(action, _replace(engine, network, desired, entry, previous_ips), warnings, previous_ips)
    if action == REPAIRED and entry is None:
        warnings.append(_clean_up_unfinished_add(engine, network, desired))
    elif action == REPAIRED:
        engine.delete(network, desired.attachment)
    result = _add_keeping_addresses(engine, network, desired.attachment, previous_ips)
    return Outcome(action, result, warnings, previous_ips)


def _clean_up_unfinished_add(engine: Engine, network: NetworkList, desired: Desired) -> str:
    """DEL what an ADD that never finished left, and say so: the attachment is then added anew. A
    failed DEL keeps the intent marker for the next run."""
    marker = engine.cache.pending_marker(desired.key)
    try:
        engine.delete(network, desired.attachment)
    except DeleteError as exc:
        raise DeleteError(f"cannot clean up after an earlier ADD of network {network.name} that did not finish "
                          f"({UNFINISHED_ADD_CAUSES}); its DEL failed", exc.cause,
                          exc.cleanup_errors, left_by_unfinished_add(marker)) from exc
    return (f"an earlier ADD of this attachment did not finish ({UNFINISHED_ADD_CAUSES}; intent marker {marker}): "
            "what it left was deleted and the attachment added anew")


def _previous_ips(network: NetworkList, desired: Desired, entry: CacheEntry | None, action: str) -> list:
    """The addresses the attachment had: its cached result's, or, for an ADD that was interrupted
    before it cached one, those its IPAM still holds for it (read before the repair's DEL
    releases them), so that the repair can ask for them again."""
    if entry is not None and entry.result:
        return summarise(entry.result)["ips"]
    if entry is None and action == REPAIRED:
        attachment = desired.attachment
        return plugin_rules().reserved_addresses(network.plugins, network.name, attachment.container_id,
                                                 attachment.ifname)
    return []


class AddWouldFailError(CNIError):
    """The host is in a state a plugin of the declared configuration refuses to ADD in."""


class ReplaceError(OperationError):
    """A replace whose new ADD failed: ``cause`` is that failure; ``cleanup_errors`` those of
    putting the attachment back as it was, if that failed too."""

    CLEANUP_TEXT = "putting it back also failed"
    CLEANUP_KEY = "put_back_errors"


def _refuse_what_add_would_refuse(network: NetworkList, desired: Desired, action: str) -> None:
    """Before anything is removed (and in check mode, which predicts the real run): refuse an
    ADD that a plugin would refuse on this host as it is now."""
    reasons = plugin_rules().add_blockers(network.plugins)
    if reasons:
        verb = {ADDED: "add", REPLACED: "replace", REPAIRED: "repair"}[action]
        raise AddWouldFailError(f"cannot {verb} the attachment: {'; '.join(reasons)}; nothing was changed")


def _replace(engine: Engine, network: NetworkList, desired: Desired, entry: CacheEntry,
             previous_ips: list) -> dict:
    """DEL the attachment as it was added, ADD it as declared; if that ADD fails, ADD it back
    as it was (its cached configuration and arguments, asking for its addresses), so that a
    workload is never left without its network, and report both."""
    engine.delete_as_added(entry)
    try:
        return _add_keeping_addresses(engine, network, desired.attachment, previous_ips)
    except CNIError as failure:
        failed = f"replace of the attachment of network {network.name} failed"
        try:
            put_back = _add_keeping_addresses(engine, network_at_add(entry), Attachment.from_cache(entry), previous_ips)
        except CNIError as put_back_failure:
            raise ReplaceError(f"{failed} and it is detached", failure, [put_back_failure]) from failure
        restored = summarise(put_back)["ips"]
        raise ReplaceError(f"{failed}; it was put back as it was, with the previous configuration and "
                           f"address {', '.join(restored) or 'none'} (it had {', '.join(previous_ips) or 'none'})",
                           failure) from failure


def _verify_foreign(engine: Engine, network: NetworkList, desired: Desired, entry: CacheEntry) -> Outcome:
    """An attachment another runtime made at the declared key: left as it is when it matches
    the declaration and passes CHECK, else refused; never repaired or replaced, since it may be
    a running container's only network."""
    made_elsewhere = (f"the attachment of network {network.name} on {desired.attachment.ifname} with container ID "
                      f"{desired.attachment.container_id} was made by another runtime")
    advice = "cnikit does not repair or replace it: detach it with state=absent, or with the runtime that made it, first"
    if not _matches(entry, network, desired.attachment):
        raise ForeignAttachmentError(f"{made_elsewhere} with another configuration, namespace or arguments; {advice}")
    healthy, warnings, notices = _health(engine, network, desired, entry, check_mode=True)
    if not healthy:
        raise ForeignAttachmentError(f"{made_elsewhere} and is not healthy ({'; '.join(warnings)}); {advice}")
    return Outcome(UNCHANGED, convert(entry.result, engine.version_of(network)), warnings, notices=notices)


def _add_keeping_addresses(engine: Engine, network: NetworkList, attachment: Attachment, previous_ips: list) -> dict:
    """ADD, asking the IPAM for the addresses the attachment had (a workload keeps its address
    across a repair) where it is an IPAM that honours requested addresses; where the IPAM cannot
    give them back (taken, outside the ranges of a changed configuration), ADD without asking."""
    wanted = [address.split("/")[0] for address in previous_ips]
    if wanted and plugin_rules().honours_requested_ips(network.plugins) \
            and not any(key == "IP" for key, _value in attachment.cni_args):
        try:
            return engine.add(network, attachment, requested_ips=wanted)
        except CNIError:
            pass  # rolled back; a new address is better than none
    return engine.add(network, attachment)


def _converge_absent(engine: Engine, desired: Desired, check_mode: bool) -> Outcome:
    entry, unusable = _cached(engine, desired)
    if entry is None and unusable is None and not _interrupted(engine, desired):
        return Outcome(ABSENT)
    if check_mode:
        return Outcome(DELETED)
    if entry is not None and entry.config is not None:
        engine.delete_as_added(entry, desired.attachment.netns)
    else:
        engine.delete(desired.load_network(), desired.attachment)
    return Outcome(DELETED)


def converge_all(engine: Engine, desired: list, check_mode: bool = False, parallel: int = 4) -> list:
    """Converge many attachments, ``parallel`` at a time. Each item's Outcome, or the CNIError
    that stopped it, in the order given; one failure does not stop the others. The engine is
    tidied once, at the end.

    The first attachment of each network is converged before that network's others start: its
    ADD does the host's side of a changed configuration (the bridge's move to a new gateway
    address with ``forceAddress``), which concurrent ADDs of the same network would race for
    (the bridge plugin's removal of the old address then fails in all but one of them)."""
    seen = {}
    for index, item in enumerate(desired):
        if item.key in seen:
            raise ConfigError(f"attachments[{index}]", f"repeats attachments[{seen[item.key]}] "
                              "(same network, container_id and ifname)", "/".join(dataclasses.astuple(item.key)))
        seen[item.key] = index

    def outcome_of(item: Desired):
        try:
            return converge(engine, item, check_mode)
        except CNIError as exc:
            return exc

    try:
        if len(desired) == 1 or parallel <= 1:
            return [outcome_of(item) for item in desired]
        first_of_network = {}
        for index, item in enumerate(desired):
            first_of_network.setdefault(item.network_name, index)
        firsts = set(first_of_network.values())
        rest = [index for index in range(len(desired)) if index not in firsts]
        outcomes = [None] * len(desired)
        with ThreadPoolExecutor(max_workers=min(parallel, len(desired))) as pool:
            for wave in (sorted(firsts), rest):
                for index, outcome in zip(wave, pool.map(outcome_of, [desired[i] for i in wave])):
                    outcomes[index] = outcome
        return outcomes
    finally:
        engine.cache.tidy()


def item_result(desired: Desired, outcome) -> dict:
    """One attachment's return value: identity, action and result, or the error."""
    item = dict(desired.attachment.identity(), state=desired.state)
    if isinstance(outcome, CNIError):
        item.update(failed=True, changed=False, action="failed", msg=str(outcome), error=outcome.to_dict())
        return item
    item.update(failed=False, changed=outcome.changed, action=outcome.action, warnings=outcome.warnings,
                result=outcome.result)
    item.update(summarise(outcome.result or {}))
    known_before = outcome.result is not None and bool(outcome.previous_ips)
    item["address_changed"] = known_before and _hosts(outcome.previous_ips) != _hosts(item["ips"])
    if known_before:
        item["previous_ips"] = outcome.previous_ips
    return item


def notices_of(desired: list, outcomes: list) -> list:
    """Each notice the outcomes hold, once, with what it is about: every attachment it holds for
    (the first few by name, then how many more)."""
    holders = {}
    for item, outcome in zip(desired, outcomes):
        for notice in getattr(outcome, "notices", ()):
            holders.setdefault(notice, []).append(about(item))
    return [f"{notice} ({first_few(names)})" for notice, names in holders.items()]


def _hosts(addresses: list) -> set:
    """The addresses without their prefix (an address read from an IPAM's reservation may lack one)."""
    return {address.split("/")[0] for address in addresses}


def about(desired: Desired) -> str:
    """What a message is about, in words an operator recognises: the network, namespace and
    interface (the container ID is a hash by default)."""
    attachment = desired.attachment
    netns = netns_name(attachment.netns) or attachment.netns
    return f"network {desired.network_name}, netns {netns}, ifname {attachment.ifname}"
