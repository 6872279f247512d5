# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""What cni_gc removes: garbage collection of the attachments whose namespace is gone (or that
an explicit list leaves out); cni_gc's task is ``_gc_task``. Only what this collection made is
ever collected; see docs/engine.md. The cache directory is read once per task
(``CacheListing``) for what is planned and reported; each GC reads it again under its lock, as
it must."""

from __future__ import annotations

from ._cache import CacheListing
from ._conflist import NetworkList, find_network, load_conf_dir
from ._defaults import DEFAULT_IFNAME
from ._engine import Engine, GCReport, network_at_add
from ._errors import CNIError
from ._identifiers import check_container_id, check_ifname
from ._netns import is_live


# -- garbage collection ---------------------------------------------------------------------------
# GC collects only what this collection made (managed cache entries). Another runtime sharing the
# cache directory collects its own: its entries are left alone in every mode, and are sent to the
# plugins' GC as valid, so that their addresses are never released under a running container.

def valid_attachment_keys(items: list, path: str = "valid_attachments") -> list:
    """``[{container_id, ifname}, ...]`` as (container ID, ifname) pairs, each part checked."""
    pairs = []
    for index, item in enumerate(items):
        pairs.append((check_container_id(item.get("container_id"), f"{path}[{index}].container_id"),
                      check_ifname(item.get("ifname", DEFAULT_IFNAME), f"{path}[{index}].ifname")))
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


def orphaned_networks(entries: list, declared: set) -> list:
    """Names of the networks of the cache ``entries`` that have attachments this collection made
    but are not in ``declared`` (the names conf_dir declares): removed from conf_dir while
    something was attached. A network only other runtimes cached is theirs, often one no file
    ever declared (containerd's built-in ``cni-loopback``): GC would never collect from it, so it
    is not named."""
    return sorted({entry.network for entry in entries if entry.managed} - declared)


def gc_plan(listing: CacheListing, network: NetworkList, valid: list | None) -> list:
    """What GC of ``network`` would collect, by ``listing``: the attachments this collection made
    that are outside ``valid`` (pairs), or, when ``valid`` is None, those whose namespace is gone."""
    return _stale(listing, network.name, _keep_declared(valid))


def gc_plan_orphaned(listing: CacheListing, network_name: str, valid: list | None) -> list:
    """What GC of a network of :func:`orphaned_networks` would collect (see :func:`collect_orphaned`)."""
    return _stale(listing, network_name, _keep_orphaned(valid))


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
    return _reported(network_name, lambda: engine.gc(network_name, [], keep=_keep_orphaned(valid)))


def left_alone(listing: CacheListing, network_name: str) -> list:
    """Another runtime's attachments of the network, which GC never collects."""
    return [dict(e.identity(), netns_exists=is_live(e.effective_netns))
            for e in listing.of_network(network_name) if not e.managed]


def unusable_entries(listing: CacheListing, network_name: str) -> list:
    """The cache files of the network that cannot be read (a runtime crashed writing one), by the
    keys their file name may stand for: GC never collects them and sends those keys as valid (to
    plugins of a network at cniVersion 1.1.0 or later, the ones GC is sent to)."""
    return [{"network": network_name, "file": problem.path, "reason": problem.reason,
             "keys": [{"container_id": cid, "ifname": ifname} for cid, ifname in problem.keys(network_name)]}
            for problem in listing.problems if problem.keys(network_name)]


def unusable_elsewhere(problems: list, reported: list) -> list:
    """The unreadable cache files (``problems``, the cache directory's) not yet ``reported`` (by
    the networks examined): of networks conf_dir does not declare and no readable entry names.
    Which network a file is of cannot be told from its name alone (network names may hold '-'),
    so ``network`` is None and ``keys`` empty; GC never collects them either."""
    seen = {item["file"] for item in reported}
    return [{"network": None, "file": problem.path, "reason": problem.reason, "keys": []}
            for problem in problems if problem.path not in seen]


def foreign_left_out(listing: CacheListing, network_name: str, valid: list | None) -> list:
    """The live attachments of another runtime that an explicit ``valid`` list leaves out: GC
    leaves them alone, and the user is told, since the list may have been meant to name them."""
    if valid is None:
        return []
    keys = set(valid)
    return [e.identity() for e in listing.of_network(network_name)
            if not e.managed and (e.container_id, e.ifname) not in keys and is_live(e.effective_netns) is not False]


def _keep_declared(valid: list | None):
    keys = set(valid or [])

    def keep(entry) -> bool:
        if not entry.managed:
            return True
        if valid is None:
            return is_live(entry.effective_netns) is not False
        return (entry.container_id, entry.ifname) in keys
    return keep


def _keep_orphaned(valid: list | None):
    keys = set(valid or [])

    def keep(entry) -> bool:
        if not entry.managed or is_live(entry.effective_netns) is not False:
            return True
        return (entry.container_id, entry.ifname) in keys or _opts_out_of_gc(entry)
    return keep


def _opts_out_of_gc(entry) -> bool:
    try:
        return network_at_add(entry).disable_gc
    except CNIError:
        return False  # an unusable cached configuration: the DEL says why


def _stale(listing: CacheListing, network_name: str, keep) -> list:
    return [e.identity() for e in listing.of_network(network_name) if not keep(e)]


def _reported(network_name: str, run_gc) -> dict:
    """cni_gc's ``collected`` and ``errors`` of one network's GC (``run_gc``, an Engine.gc)."""
    try:
        report = run_gc()
    except CNIError as exc:
        report = GCReport(errors=[exc.to_dict()])
    return {"collected": report.deleted, "errors": [dict(error, network=network_name) for error in report.errors]}
