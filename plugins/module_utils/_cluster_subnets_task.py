# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_cluster_subnets' task, run by its action plugin on the controller: the subnets file read,
the allocation made and the file written under one lock, so that two plays at once never lose an
entry. In check mode, nothing is locked or written: the result and the diff are the prediction."""

from __future__ import annotations

import contextlib
import os

from . import _subnets_file
from ._allocation import allocate
from ._defaults import DEFAULT_CLUSTER_HOST_PREFIX
from ._errors import ConfigError

# The action's options, as Ansible's argument spec validation takes them. Not an _argspec
# ArgumentSpec: the action runs on the controller and takes none of the managed-node path options
# (it is not in the cni action group).
OPTIONS = {
    "path": {"type": "path", "required": True},
    "cidr": {"type": "str", "required": True},
    "host_prefix": {"type": "int", "default": DEFAULT_CLUSTER_HOST_PREFIX},
    "network": {"type": "str", "required": True},
    "members": {"type": "dict", "required": True},
}


def run(params: dict, check_mode: bool) -> dict:
    """The task's result: ``changed``, ``subnets``, ``addresses``, ``released``, ``pending``,
    ``changes``, ``path`` and ``diff``. Raises ConfigError for bad input or a file it cannot use, OSError when
    the file cannot be written."""
    path = params["path"]
    directory = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(directory):
        raise ConfigError("path", f"its directory {directory} does not exist", path)
    with contextlib.nullcontext() if check_mode else _subnets_file.locked(path):
        before, previous = _subnets_file.read(path)
        allocation = allocate(params["cidr"], params["host_prefix"], params["network"], params["members"],
                              previous, file_label=path)
        after = _subnets_file.render(allocation.content, params["network"]) if allocation.changed else before
        if allocation.changed and not check_mode:
            _subnets_file.write(path, after)
    return {
        "changed": allocation.changed,
        "path": path,
        "subnets": allocation.subnets,
        "addresses": allocation.addresses,
        "released": allocation.released,
        "pending": allocation.pending,
        "changes": allocation.changes,
        "diff": {"before": before or "", "after": after or "", "before_header": path, "after_header": path},
    }
