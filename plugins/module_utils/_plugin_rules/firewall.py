# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""firewall (plugins/meta/firewall): iptables or firewalld rules for the container's addresses."""

from __future__ import annotations

from .._schemas import DEFS, plugin_schema
from ._common import PluginRules

BACKENDS = ("iptables", "firewalld")
SCHEMA = plugin_schema({
    "backend": DEFS["string"],
    "firewalldZone": DEFS["string"],
    "iptablesAdminChainName": {"type": "string", "minLength": 1, "maxLength": 28},
    "ingressPolicy": {"enum": ["open", "same-bridge", "isolated", ""]},
})


def check(plugin: dict, ctx) -> None:
    backend = plugin.get("backend")
    # Any other value, "" (what podman writes) and "nftables" included, means auto-detection.
    if isinstance(backend, str) and backend and backend not in BACKENDS:
        ctx.warn(["backend"], "is not a firewall backend (iptables, firewalld): the plugin falls back to "
                 "auto-detection (firewalld if it runs, else iptables)", backend)
    if plugin.get("ingressPolicy") in ("same-bridge", "isolated") and not any(t == "bridge" for t, _p in ctx.seen):
        # The plugin takes the first interface of the previous result as the bridge; after
        # another plugin that is a host veth, so the ADD works but isolates nothing useful.
        ctx.warn(["ingressPolicy"], "same-bridge and isolated are meant for the firewall plugin chained after bridge",
                 plugin["ingressPolicy"])


RULES = PluginRules(SCHEMA, check, min_spec="0.4.0", chained=True, added_in={"ingressPolicy": "1.1.0"})
