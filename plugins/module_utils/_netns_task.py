# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_netns's task: a named network namespace present, or absent once the attachments cached
in it are DELeted as they were added; the namespace itself is ``_netns``'s."""

from __future__ import annotations

from . import _netns
from ._argspec import ArgumentSpec
from ._cache_dir import warn_of_cache_dir
from ._engine import Engine
from ._errors import CNIError
from ._identifiers import canonical_netns, check_netns_name, netns_path

ARGUMENT_SPEC = ArgumentSpec({
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "delete_attachments": {"type": "bool", "default": True},
})


def run(host, params: dict, result: dict) -> None:
    """``host`` is the module's ``_ansible_glue.ModuleHost``."""
    host.require_libraries("pyroute2")
    state = params["state"]
    result.update({"changed": False, "name": params["name"], "path": None, "deleted_attachments": []})
    errors = []
    name = check_netns_name(params["name"], "name")
    result["path"] = netns_path(name)
    if state == "present":
        existed = _netns.exists(name)
        if not existed and not host.check_mode:
            _netns.create(name)
    else:
        engine = Engine(params["cni_path"], params["cache_dir"], params["timeout"])
        warn_of_cache_dir(host, params["cache_dir"])
        existed, result["deleted_attachments"], errors = ensure_absent(
            engine, name, params["delete_attachments"], host.check_mode)
    before = "present" if existed else "absent"
    result["changed"] = before != state or bool(result["deleted_attachments"])
    if errors:
        result["changed"] = bool(result["deleted_attachments"])
        host.fail(f"cannot DEL {len(errors)} cached attachments of namespace {name}, so it was not removed; "
                  f"first: {errors[0]}", errors=[e.to_dict() for e in errors], **result)
    if host.diff:
        result["diff"] = {"before": {"state": before}, "after": {"state": state}}


def ensure_absent(engine: Engine, name: str, with_attachments: bool, check_mode: bool) -> tuple:
    """DEL the namespace's cached attachments (``with_attachments``: the option
    ``delete_attachments``), then remove it unless a DEL failed: (whether it existed, the
    attachments deleted, the DEL errors)."""
    existed = _netns.exists(name)
    entries = attachments_in_netns(engine, netns_path(name)) if with_attachments else []
    if check_mode:
        return existed, [e.identity() for e in entries], []
    deleted, errors = delete_attachments(engine, entries)
    if existed and not errors:
        _netns.remove(name)
    return existed, deleted, errors


def attachments_in_netns(engine: Engine, netns: str) -> list:
    """The cache entries of every attachment made into the namespace at path ``netns``."""
    wanted = canonical_netns(netns)
    entries, _problems = engine.cache.entries()
    return [e for e in entries if canonical_netns(e.effective_netns) == wanted]


def delete_attachments(engine: Engine, entries: list) -> tuple:
    """DEL each entry with the network config cached at its ADD, trying every one: the entries
    deleted, and the errors of those that were not (their cache entries stay for a retry)."""
    deleted, errors = [], []
    for entry in entries:
        try:
            engine.delete_as_added(entry)
        except CNIError as exc:
            errors.append(exc)
            continue
        deleted.append(entry.identity())
    engine.cache.tidy()
    return deleted, errors
