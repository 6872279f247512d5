# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_underlay_info's service: what a member of the routed network must know before it changes
anything. The uplink is the interface holding the host's own address (its name and MTU, from
``ip -j addr``), and each peer is adjacent or not (``_adjacency``, asked of the kernel over
rtnetlink in one batch). Reads only."""

from __future__ import annotations

import json

from ._adjacency import adjacency
from ._errors import CNIError, ConfigError
from ._identifiers import check_ip


def find_uplink(addr_json: str, address) -> tuple:
    """(name, MTU) of the interface ``ip -j addr show`` lists with ``address``; ConfigError
    naming the address when none holds it."""
    for link in json.loads(addr_json or "[]"):
        for item in link.get("addr_info", []):
            if item.get("local") and check_ip(item["local"], "addr_info") == address:
                return link["ifname"], link["mtu"]
    raise ConfigError("address", "no interface of this host holds this address (the host's address in the network, "
                      "cni_cluster_address or ansible_host)", str(address))


def read_underlay(host, address, peers: dict) -> dict:
    """The uplink holding ``address`` and each peer's adjacency (``peers``: name to address,
    ipaddress addresses), as cni_underlay_info returns them."""
    from ._rtnetlink import RouteSocket  # pylint: disable=import-outside-toplevel
    from ._routes import InterfaceNames  # pylint: disable=import-outside-toplevel

    rc, out, err = host.run_command(["ip", "-j", "addr", "show"])
    if rc != 0:
        raise CNIError(f"ip -j addr show failed: {err.strip()}")
    interface, mtu = find_uplink(out, address)
    with RouteSocket() as netlink:
        reasons = adjacency(netlink, list(peers.values()), InterfaceNames())
    return {
        "interface": interface,
        "mtu": mtu,
        "adjacent": [name for name, reason in zip(peers, reasons) if not reason],
        "not_adjacent": [{"name": name, "address": str(peers[name]), "reason": reason}
                         for name, reason in zip(peers, reasons) if reason],
    }
