# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""tuning (plugins/meta/tuning): sysctls and link settings of the container interface."""

from __future__ import annotations

import os
import re

from .._schemas import DEFS, plugin_schema
from ._common import KnownCheckDefect, PluginRules, check_mac, check_mtu, map_of

SCHEMA = plugin_schema({
    "sysctl": {"type": "object", "additionalProperties": DEFS["string"]},
    "mac": DEFS["mac"], "promisc": DEFS["bool"], "mtu": DEFS["uint"], "txQLen": DEFS["uint"],
    "allmulti": DEFS["bool"], "dataDir": DEFS["string"],
})
PROC_SYS = "/proc/sys"
# net.<family>.<conf|neigh>.<interface>.<leaf>: per-interface keys, judged on the host's "lo".
_PER_INTERFACE = re.compile(r"\A(net/ipv[46]/(?:conf|neigh))/[^/]+/([^/]+)\Z")


def _sysctl_file(key: str) -> str:
    """The file tuning writes, relative to /proc/sys, with IFNAME replaced by the host's lo."""
    relative = key if "/" in key else key.replace(".", "/")
    relative = relative.replace("IFNAME", "lo", 1)
    per_interface = _PER_INTERFACE.match(relative)
    return f"{per_interface.group(1)}/lo/{per_interface.group(2)}" if per_interface else relative


def _check_sysctl(sysctl: dict, ctx) -> None:
    for key in sysctl:
        if not isinstance(key, str) or not re.match(r"\Anet[./]", key) or ".." in key:
            ctx.error(["sysctl", key], "invalid net sysctl key: it must start with 'net.' or 'net/'", key)
        elif ctx.on_host and "\0" not in key and ctx.on_host.is_dir(f"{PROC_SYS}/net") \
                and not ctx.on_host.exists(os.path.join(PROC_SYS, _sysctl_file(key))):
            ctx.error(["sysctl", key], "is not a sysctl this kernel has (tuning fails 'no such file or directory')", key,
                      of_host=True)


def check(plugin: dict, ctx) -> None:
    sysctl = plugin.get("sysctl")
    if isinstance(sysctl, dict):
        _check_sysctl(sysctl, ctx)
    elif "sysctl" in map_of(map_of(plugin.get("args")).get("cni")):
        ctx.error(["args", "cni", "sysctl"], "needs a top-level sysctl object too: without one the tuning plugin "
                  "crashes (assignment to entry in nil map)")
    check_mtu(plugin, ctx)
    check_mac(plugin, ctx)


IFNAME_SYSCTL_CHECK = KnownCheckDefect(
    "tuning-ifname-sysctl", re.compile("/IFNAME/"),
    "tuning before v1.3.0 does not put the interface name into IFNAME sysctl keys during CHECK "
    "(containernetworking/plugins#885)", fixed_in="1.3.0")

RULES = PluginRules(
    SCHEMA, check, chained=True, added_in={"txQLen": "1.4.0"}, check_defects=(IFNAME_SYSCTL_CHECK,),
    duplicate_key_errors={"sysctl": "duplicated sysctl keys are not allowed (the tuning plugin rejects them)"},
)
