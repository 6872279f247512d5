# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_underlay_info's task: its options (ARGUMENT_SPEC) and run, reading with ``_underlay``."""

from __future__ import annotations

from ._argspec import ArgumentSpec
from ._identifiers import check_ip
from ._underlay import read_underlay

ARGUMENT_SPEC = ArgumentSpec({
    "address": {"type": "str", "required": True},
    "peers": {"type": "dict", "default": {}},
})


def run(host, params: dict, result: dict) -> None:
    """``host`` is the module's ``_ansible_glue.ModuleHost``."""
    result["changed"] = False
    address = check_ip(params["address"], "address")
    peers = {name: check_ip(text, f"peers.{name}") for name, text in sorted((params["peers"] or {}).items())}
    result.update(read_underlay(host, address, peers))
