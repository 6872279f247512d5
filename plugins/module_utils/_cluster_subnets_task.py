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
from ._allocation import allocate_stack, first_address
from ._defaults import DEFAULT_CLUSTER_HOST_PREFIX, DEFAULT_CLUSTER_HOST_PREFIX_V6
from ._errors import ConfigError

# The action's options, as Ansible's argument spec validation takes them. Not an _argspec
# ArgumentSpec: the action runs on the controller and takes none of the managed-node path options
# (it is not in the cni action group).
OPTIONS = {
    "path": {"type": "path", "required": True},
    "cidr": {"type": "str", "required": True},
    "host_prefix": {"type": "int", "default": DEFAULT_CLUSTER_HOST_PREFIX},
    "cidr_v6": {"type": "str"},
    "host_prefix_v6": {"type": "int", "default": DEFAULT_CLUSTER_HOST_PREFIX_V6},
    "network": {"type": "str", "required": True},
    "members": {"type": "dict", "required": True},
}


def run(params: dict, check_mode: bool) -> dict:
    """The task's result: ``changed``, ``subnets``, ``addresses``, ``released`` (and of a
    dual-stack network's IPv6 part ``subnets_v6``, ``addresses_v6``, ``released_v6``, empty
    without it), ``gateways`` and ``gateways_v6`` (each subnet's first address, with its
    length), ``pending``, ``changes``, ``path`` and ``diff``. Raises ConfigError for bad input or a file it cannot use, OSError when
    the file cannot be written."""
    path = params["path"]
    directory = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(directory):
        raise ConfigError("path", f"its directory {directory} does not exist", path)
    with contextlib.nullcontext() if check_mode else _subnets_file.locked(path):
        before, previous = _subnets_file.read(path)
        allocation, allocation_v6, content = allocate_stack(
            params["cidr"], params["host_prefix"], params.get("cidr_v6"),
            params.get("host_prefix_v6", DEFAULT_CLUSTER_HOST_PREFIX_V6), params["network"], params["members"],
            previous, file_label=path)
        changed = allocation.changed or bool(allocation_v6 and allocation_v6.changed)
        after = _subnets_file.render(content, params["network"]) if changed else before
        if changed and not check_mode:
            _subnets_file.write(path, after)
    return {
        "changed": changed,
        "path": path,
        "subnets": allocation.subnets,
        "addresses": allocation.addresses,
        "released": allocation.released,
        "gateways": {host: first_address(subnet) for host, subnet in allocation.subnets.items()},
        "subnets_v6": allocation_v6.subnets if allocation_v6 else {},
        "gateways_v6": {host: first_address(subnet) for host, subnet in allocation_v6.subnets.items()}
        if allocation_v6 else {},
        "addresses_v6": allocation_v6.addresses if allocation_v6 else {},
        "released_v6": allocation_v6.released if allocation_v6 else {},
        # A member waits until both its subnets can be given (the IPv6 part may be newer).
        "pending": allocation.pending + [name for name in (allocation_v6.pending if allocation_v6 else [])
                                         if name not in allocation.pending],
        "changes": allocation.changes + (allocation_v6.changes if allocation_v6 else []),
        "diff": {"before": before or "", "after": after or "", "before_header": path, "after_header": path},
    }
