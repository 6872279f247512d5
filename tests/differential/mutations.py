# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Systematic mutations per plugin: a working base configuration for each plugin, and one
change at a time (a wrong type, a boundary value, a rule of the plugin's own code, a rule of a
newer release, a mistake the kernel refuses). The harness renames bridges and masters to the
test prefix and moves the addresses into test ranges; ``BRIDGE``, ``MASTER`` and ``DEVICE``
are the placeholders it replaces."""

from __future__ import annotations

import copy

BRIDGE = "@bridge"
MASTER = "@master"
DEVICE = "@device"
SUBNET = "10.1.0.0/24"


def host_local(**extra) -> dict:
    return {"type": "host-local", "subnet": SUBNET, **extra}


def static(*addresses, **extra) -> dict:
    return {"type": "static", "addresses": list(addresses), **extra}


def bridge(**extra) -> dict:
    return {"type": "bridge", "bridge": BRIDGE, "ipam": host_local(), **extra}


def ptp(**extra) -> dict:
    return {"type": "ptp", "ipam": host_local(), **extra}


def conflist(*plugins, version="0.4.0", **envelope) -> dict:
    return {"cniVersion": version, "name": "cnit-diff", **envelope, "plugins": [copy.deepcopy(p) for p in plugins]}


def _with(plugin: dict, **changes) -> dict:
    result = copy.deepcopy(plugin)
    for key, value in changes.items():
        if value is _DROP:
            result.pop(key, None)
        else:
            result[key] = value
    return result


_DROP = object()

# (plugin the case is about, case id, conflist)
MUTATIONS = [
    # --- envelope (libcni, skel) ---
    ("envelope", "base", conflist(bridge())),
    ("envelope", "name with a space", dict(conflist(bridge()), name="cnit diff")),
    ("envelope", "cniVersion 1.1.0 on binaries before v1.6.0", conflist(bridge(), version="1.1.0")),
    ("envelope", "cniVersions offering 1.0.0 and 1.1.0", conflist(bridge(), version="1.1.0", cniVersions=["1.0.0", "1.1.0"])),
    ("envelope", "cniVersion 0.2.0", conflist(bridge(), version="0.2.0")),
    ("envelope", "plugin without type", conflist({"bridge": BRIDGE})),
    ("envelope", "args inside a plugin", conflist(bridge(args={"cni": {"labels": [{"key": "app", "value": "x"}]}}))),
    ("envelope", "ipam.type naming a path", conflist(bridge(ipam={"type": "../host-local", "subnet": SUBNET}))),
    ("envelope", "chained plugin first", conflist({"type": "tuning"}, bridge())),
    ("envelope", "two plugins creating the interface", conflist(bridge(), ptp(ipam=host_local(subnet="10.2.0.0/24")))),
    ("envelope", "dns nameserver given by name", conflist(bridge(dns={"nameservers": ["ns1.example.test"]}))),
    ("envelope", "runtimeConfig written in a plugin (tuning reads its mac)", conflist(
        bridge(), {"type": "tuning", "runtimeConfig": {"mac": "02:00:00:00:00:43"}})),
    # --- bridge ---
    ("bridge", "mtu as a string", conflist(bridge(mtu="1500"))),
    ("bridge", "mtu with a fraction", conflist(bridge(mtu=1500.5))),
    ("bridge", "mtu as a whole-number float (libcni passes 1500)", conflist(bridge(mtu=1500.0))),
    ("bridge", "mtu 68, the kernel's minimum", conflist(bridge(mtu=68))),
    ("bridge", "mtu 67, below the kernel's minimum", conflist(bridge(mtu=67))),
    ("bridge", "mtu 65535, the kernel's maximum", conflist(bridge(mtu=65535))),
    ("bridge", "mtu 65536, above the kernel's maximum", conflist(bridge(mtu=65536))),
    ("bridge", "vlan 4094", conflist(bridge(vlan=4094))),
    ("bridge", "vlan 4095", conflist(bridge(vlan=4095))),
    ("bridge", "isGateway as a string", conflist(bridge(isGateway="true"))),
    ("bridge", "isGateway with gateway outside subnet", conflist(bridge(isGateway=True, ipam=host_local(gateway="10.2.0.1")))),
    ("bridge", "isGateway with two IPv4 range sets", conflist(bridge(isGateway=True, ipam={
        "type": "host-local", "ranges": [[{"subnet": SUBNET}], [{"subnet": "10.2.0.0/24"}]]}))),
    ("bridge", "isGateway with two IPv4 range sets and forceAddress", conflist(bridge(isGateway=True, forceAddress=True, ipam={
        "type": "host-local", "ranges": [[{"subnet": SUBNET}], [{"subnet": "10.2.0.0/24"}]]}))),
    ("bridge", "isGateway with an IPv4 and an IPv6 range set", conflist(bridge(isGateway=True, ipam={
        "type": "host-local", "ranges": [[{"subnet": SUBNET}], [{"subnet": "fd00:1::/64"}]]}))),
    ("bridge", "hairpinMode and promiscMode", conflist(bridge(hairpinMode=True, promiscMode=True))),
    ("bridge", "vlanTrunk minID above maxID (rule of v1.3.0)", conflist(bridge(vlanTrunk=[{"minID": 20, "maxID": 10}]))),
    ("bridge", "disableContainerInterface with IPAM (rule of v1.4.1)", conflist(bridge(disableContainerInterface=True))),
    ("bridge", "ipMasqBackend unknown (key of v1.6.0)", conflist(bridge(ipMasqBackend="nft"))),
    ("bridge", "key in another case", conflist(bridge(MTU=1400))),
    ("bridge", "key with a typo", conflist(bridge(isGatway=True))),
    ("bridge", "bridge name of 16 characters", conflist(bridge(bridge="cnit-x-sixteen16"))),
    ("bridge", "no ipam (L2 only)", conflist(_with(bridge(), ipam=_DROP))),
    ("bridge", "empty ipam (L2 only)", conflist(bridge(ipam={}))),
    ("bridge", "ipam without type", conflist(bridge(ipam={"subnet": SUBNET}))),
    # --- ptp ---
    ("ptp", "base", conflist(ptp())),
    ("ptp", "mtu 65536", conflist(ptp(mtu=65536))),
    ("ptp", "no ipam", conflist(_with(ptp(), ipam=_DROP))),
    ("ptp", "static address without gateway", conflist(ptp(ipam=static({"address": "10.1.0.5/24"})))),
    ("ptp", "static address with gateway", conflist(ptp(ipam=static({"address": "10.1.0.5/24", "gateway": "10.1.0.1"})))),
    ("ptp", "ipMasq as a string", conflist(ptp(ipMasq="false"))),
    # --- macvlan (on a veth the harness creates) ---
    ("macvlan", "base", conflist({"type": "macvlan", "master": MASTER, "ipam": host_local()})),
    ("macvlan", "mode unknown", conflist({"type": "macvlan", "master": MASTER, "mode": "bridged", "ipam": host_local()})),
    ("macvlan", "multicast mac", conflist({"type": "macvlan", "master": MASTER, "mac": "01:00:5e:00:00:01", "ipam": host_local()})),
    ("macvlan", "mtu above the master's", conflist({"type": "macvlan", "master": MASTER, "mtu": 9000, "ipam": host_local()})),
    ("macvlan", "bcqueuelen (key of v1.6.0)", conflist({"type": "macvlan", "master": MASTER, "bcqueuelen": 100, "ipam": host_local()})),
    ("macvlan", "master of 16 characters", conflist({"type": "macvlan", "master": "cnit-x-sixteen16", "ipam": host_local()})),
    # --- modules this kernel may lack ---
    ("ipvlan", "base", conflist({"type": "ipvlan", "master": MASTER, "ipam": host_local()})),
    ("ipvlan", "first without ipam", conflist({"type": "ipvlan", "master": MASTER})),
    ("vlan", "base", conflist({"type": "vlan", "master": MASTER, "vlanId": 10, "ipam": host_local()})),
    ("vlan", "without master", conflist({"type": "vlan", "vlanId": 10, "ipam": host_local()})),
    ("vlan", "vlanId 4095", conflist({"type": "vlan", "master": MASTER, "vlanId": 4095, "ipam": host_local()})),
    ("vrf", "base", conflist(bridge(), {"type": "vrf", "vrfname": "cnit-x-vrf"})),
    ("vrf", "without vrfname", conflist(bridge(), {"type": "vrf"})),
    ("dummy", "base", conflist({"type": "dummy", "ipam": host_local()})),
    ("tap", "base", conflist({"type": "tap", "ipam": host_local()})),
    # --- host-device (a veth end the harness creates) ---
    ("host-device", "base", conflist({"type": "host-device", "device": DEVICE})),
    ("host-device", "no selector", conflist({"type": "host-device"})),
    ("host-device", "kernelpath outside /sys/devices", conflist({"type": "host-device", "kernelpath": "/sys/class/net/lo"})),
    # --- loopback ---
    ("loopback", "base", conflist({"type": "loopback"})),
    # --- host-local ---
    ("host-local", "legacy range with bounds", conflist(bridge(ipam=host_local(rangeStart="10.1.0.10", rangeEnd="10.1.0.20")))),
    ("host-local", "ranges, dual stack", conflist(bridge(ipam={"type": "host-local", "ranges": [[{"subnet": SUBNET}], [{"subnet": "fd00:1::/64"}]]}))),
    ("host-local", "subnet with host bits", conflist(bridge(ipam=host_local(subnet="10.1.0.5/24")))),
    ("host-local", "subnet /31", conflist(bridge(ipam=host_local(subnet="10.1.0.0/31")))),
    ("host-local", "subnet /30", conflist(bridge(ipam=host_local(subnet="10.1.0.0/30")))),
    ("host-local", "subnet with a leading zero", conflist(bridge(ipam=host_local(subnet="10.1.00.0/24")))),
    ("host-local", "subnet usePodCidr under bridge", conflist(bridge(ipam=host_local(subnet="usePodCidr")))),
    ("host-local", "rangeStart after rangeEnd", conflist(bridge(ipam=host_local(rangeStart="10.1.0.20", rangeEnd="10.1.0.10")))),
    ("host-local", "rangeStart outside the subnet", conflist(bridge(ipam=host_local(rangeStart="10.2.0.10")))),
    ("host-local", "gateway outside the subnet", conflist(bridge(ipam=host_local(gateway="10.2.0.1")))),
    ("host-local", "gateway of the other family", conflist(bridge(ipam=host_local(gateway="fd00:1::1")))),
    ("host-local", "only address is the gateway", conflist(bridge(ipam=host_local(rangeStart="10.1.0.1", rangeEnd="10.1.0.1")))),
    ("host-local", "range of two with the gateway", conflist(bridge(ipam=host_local(rangeStart="10.1.0.1", rangeEnd="10.1.0.2")))),
    ("host-local", "no ranges", conflist(bridge(ipam={"type": "host-local"}))),
    ("host-local", "overlapping range sets", conflist(bridge(ipam={"type": "host-local", "ranges": [[{"subnet": SUBNET}], [{"subnet": "10.1.0.128/25"}]]}))),
    ("host-local", "route with host bits", conflist(bridge(ipam=host_local(routes=[{"dst": "10.3.0.5/16"}])))),
    ("host-local", "route via a gateway outside every subnet", conflist(bridge(ipam=host_local(routes=[{"dst": "10.3.0.0/16", "gw": "10.2.0.1"}])))),
    ("host-local", "default route via the subnet's gateway", conflist(bridge(ipam=host_local(routes=[{"dst": "0.0.0.0/0"}])))),
    ("host-local", "default route via a gateway outside the subnet", conflist(bridge(ipam=host_local(gateway="10.2.0.1", routes=[{"dst": "0.0.0.0/0"}])))),
    ("host-local", "two IPv4 range sets on 0.2.0", conflist(
        bridge(ipam={"type": "host-local", "ranges": [[{"subnet": SUBNET}], [{"subnet": "10.2.0.0/24"}]]}), version="0.2.0")),
    # --- static ---
    ("static", "base", conflist(bridge(ipam=static({"address": "10.1.0.5/24", "gateway": "10.1.0.1"})))),
    ("static", "no addresses", conflist(bridge(ipam={"type": "static"}))),
    ("static", "empty addresses", conflist(bridge(ipam=static()))),
    ("static", "address without prefix", conflist(bridge(ipam=static({"address": "10.1.0.5"})))),
    ("static", "gateway outside the address's subnet", conflist(bridge(ipam=static({"address": "10.1.0.5/24", "gateway": "10.2.0.1"})))),
    ("static", "route via a gateway outside every subnet", conflist(
        bridge(ipam=static({"address": "10.1.0.5/24"}, routes=[{"dst": "10.3.0.0/16", "gw": "10.2.0.1"}])))),
    ("static", "dns nameserver given by name", conflist(bridge(ipam=static({"address": "10.1.0.5/24"}, dns={"nameservers": ["ns1.example.test"]})))),
    # --- dhcp ---
    ("dhcp", "base", conflist(bridge(ipam={"type": "dhcp"}))),
    # --- tuning ---
    ("tuning", "sysctl per interface", conflist(bridge(), {"type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.arp_filter": "1"}})),
    ("tuning", "sysctl the kernel lacks", conflist(bridge(), {"type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.no_such_knob": "1"}})),
    ("tuning", "sysctl outside net", conflist(bridge(), {"type": "tuning", "sysctl": {"kernel.panic": "1"}})),
    ("tuning", "sysctl value as a number", conflist(bridge(), {"type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.arp_filter": 1}})),
    ("tuning", "unicast mac", conflist(bridge(), {"type": "tuning", "mac": "02:00:00:00:00:42"})),
    ("tuning", "multicast mac", conflist(bridge(), {"type": "tuning", "mac": "01:00:5e:00:00:01"})),
    ("tuning", "all-zero mac", conflist(bridge(), {"type": "tuning", "mac": "00:00:00:00:00:00"})),
    ("tuning", "mtu 1400", conflist(bridge(), {"type": "tuning", "mtu": 1400})),
    ("tuning", "mtu 65536", conflist(bridge(), {"type": "tuning", "mtu": 65536})),
    ("tuning", "promisc as a string", conflist(bridge(), {"type": "tuning", "promisc": "true"})),
    ("tuning", "args.cni.sysctl without sysctl", conflist(bridge(), {"type": "tuning", "args": {"cni": {"sysctl": {"net.ipv4.conf.IFNAME.arp_filter": "1"}}}})),
    # --- portmap (no port mappings are passed: nothing reaches the host's tables) ---
    ("portmap", "base", conflist(bridge(), {"type": "portmap", "capabilities": {"portMappings": True}})),
    ("portmap", "markMasqBit 32", conflist(bridge(), {"type": "portmap", "capabilities": {"portMappings": True}, "markMasqBit": 32})),
    ("portmap", "markMasqBit with externalSetMarkChain", conflist(
        bridge(), {"type": "portmap", "capabilities": {"portMappings": True}, "markMasqBit": 13, "externalSetMarkChain": "KUBE-MARK-MASQ"})),
    ("portmap", "backend nftables (key of v1.6.0)", conflist(bridge(), {"type": "portmap", "capabilities": {"portMappings": True}, "backend": "nftables"})),
    ("portmap", "nftables conditions without backend", conflist(
        bridge(), {"type": "portmap", "capabilities": {"portMappings": True}, "conditionsV4": ["ip", "saddr", "10.9.0.0/16"]})),
    # --- bandwidth (ingress only: egress creates an ifb device outside the test prefix) ---
    ("bandwidth", "base", conflist(bridge(), {"type": "bandwidth", "ingressRate": 8000000, "ingressBurst": 1000000})),
    ("bandwidth", "rate without burst", conflist(bridge(), {"type": "bandwidth", "ingressRate": 8000000})),
    ("bandwidth", "burst above 4GB", conflist(bridge(), {"type": "bandwidth", "ingressRate": 8000000, "ingressBurst": 34359738360})),
    ("bandwidth", "rate of 1 bit per second", conflist(bridge(), {"type": "bandwidth", "ingressRate": 1, "ingressBurst": 1000000})),
    ("bandwidth", "burst of 7 bits", conflist(bridge(), {"type": "bandwidth", "ingressRate": 8000000, "ingressBurst": 7})),
    ("bandwidth", "burst of one byte at 1 Gbit/s", conflist(bridge(), {"type": "bandwidth", "ingressRate": 1000000000, "ingressBurst": 8})),
    ("bandwidth", "burst of one byte at 80 kbit/s", conflist(bridge(), {"type": "bandwidth", "ingressRate": 80000, "ingressBurst": 8})),
    ("bandwidth", "after ptp", conflist(ptp(), {"type": "bandwidth", "ingressRate": 8000000, "ingressBurst": 1000000})),
    ("bandwidth", "on cniVersion 0.2.0", conflist(bridge(), {"type": "bandwidth", "ingressRate": 8000000, "ingressBurst": 1000000}, version="0.2.0")),
    # --- firewall ---
    ("firewall", "backend iptables", conflist(bridge(), {"type": "firewall", "backend": "iptables"})),
    ("firewall", "backend empty, as podman writes", conflist(bridge(), {"type": "firewall", "backend": ""})),
    ("firewall", "backend nftables, which falls back", conflist(bridge(), {"type": "firewall", "backend": "nftables"})),
    ("firewall", "ingressPolicy unknown", conflist(bridge(), {"type": "firewall", "backend": "iptables", "ingressPolicy": "closed"})),
    ("firewall", "same-bridge after bridge", conflist(bridge(), {"type": "firewall", "backend": "iptables", "ingressPolicy": "same-bridge"})),
    ("firewall", "same-bridge after ptp", conflist(ptp(), {"type": "firewall", "backend": "iptables", "ingressPolicy": "same-bridge"})),
    ("firewall", "on cniVersion 0.3.1", conflist(bridge(), {"type": "firewall", "backend": "iptables"}, version="0.3.1")),
    # --- sbr ---
    ("sbr", "base", conflist(ptp(), {"type": "sbr"})),
    ("sbr", "table (key of v1.6.0)", conflist(ptp(), {"type": "sbr", "table": 150})),
    ("sbr", "two IPv4 gateways (unreleased keys)", conflist(ptp(), {"type": "sbr", "gateways": ["10.1.0.1", "10.1.0.2"]})),
]
