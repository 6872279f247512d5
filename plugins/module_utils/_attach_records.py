# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The attach service's bookkeeping in the engine's cache directory: whether an ADD was
interrupted (its intent marker outlived it), and which tolerated CHECK defects an attachment has
already been warned of. The engine's verbs write and clear the markers; deciding what they mean
for an attachment is the service's."""

from __future__ import annotations

import os

from . import _cache
from ._engine import Attachment, Engine

# Why an ADD's intent marker can outlive it: the words of every message about one.
UNFINISHED_ADD_CAUSES = "its run was stopped, or its rollback failed"


def left_by_unfinished_add(marker: str) -> str:
    """What an ADD that did not finish, whose intent marker is at ``marker``, means for the host
    and for the attachment's next run."""
    return (f"what the plugins made may be left on the host (an interface, an address, rules); the intent marker "
            f"{marker} records it, and the next cni_attach of this attachment (state present or absent) DELs it first")


def interrupted(engine: Engine, attachment: Attachment) -> bool:
    """True when an ADD of this attachment was started and never finished nor rolled back."""
    return _cache.is_pending(engine.cache_dir, attachment.key)


def unfinished_adds(engine: Engine, entries: list) -> list:
    """The intent markers of ADDs that neither finished nor were rolled back (the run was stopped,
    or the rollback's DEL failed): their plugins may have left an interface, an address or
    rules. ``entries`` are the usable cache entries; a marker beside a complete one is of an ADD
    that did finish."""
    finished = {os.path.basename(entry.path) for entry in entries if entry.result is not None}
    return [path for path in _cache.list_pending(engine.cache_dir) if os.path.basename(path) not in finished]


def clear_finished_intent(engine: Engine, attachment: Attachment) -> None:
    """Remove the intent marker of an ADD that did finish: a kill between writing the cache
    entry (the ADD's last step) and removing the marker leaves both, and the complete entry
    proves the ADD done."""
    key = attachment.key
    with _cache.attachment_lock(engine.cache_dir, key):
        try:
            entry = _cache.read_entry(engine.cache_dir, key)
        except _cache.CacheError:
            return
        if entry is not None and entry.config is not None and entry.result is not None:
            _cache.clear_pending(engine.cache_dir, key)


def record_reported_defects(engine: Engine, attachment: Attachment, names: list) -> None:
    """Remember in our cache entry that these tolerated defects were reported, so that they
    are reported once per attachment, not on every run."""
    key = attachment.key
    with _cache.attachment_lock(engine.cache_dir, key):
        entry = _cache.read_entry(engine.cache_dir, key)
        if entry is not None and entry.managed:
            entry.reported_defects = sorted(set(entry.reported_defects) | set(names))
            _cache.write_entry(engine.cache_dir, entry)
