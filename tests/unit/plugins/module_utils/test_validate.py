# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Conflist validation: every rule of every layer, valid and invalid, plus the corpus of
real-world conflists under tests/unit/fixtures/conflists."""

from __future__ import annotations

import json
import pathlib
from types import SimpleNamespace

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._errors import PluginNotFoundError
from ansible_collections.cnikit.cni.plugins.module_utils._network_file import build_conflist
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules._common import json_path
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules.registry import IPAM_SCHEMAS, PLUGIN_SCHEMAS
from ansible_collections.cnikit.cni.plugins.module_utils._validate import (
    parse_conflist_text, validate_network_list, validate_text,
)

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "conflists"

BRIDGE_HL = {"type": "bridge", "ipam": {"type": "host-local", "subnet": "10.9.0.0/24"}}
PTP_HL = {"type": "ptp", "ipam": {"type": "host-local", "subnet": "10.9.1.0/24"}}


def net(*plugins, version="1.0.0", **envelope):
    return {"cniVersion": version, "name": "t", **envelope, "plugins": list(plugins)}


def hl(**ipam):
    return {"type": "bridge", "ipam": {"type": "host-local", **ipam}}


def error_paths(conf, **kwargs):
    return [f.path for f in validate_network_list(conf, **kwargs).errors]


def warning_paths(conf, **kwargs):
    return [f.path for f in validate_network_list(conf, **kwargs).warnings]


# (id, conflist, JSON path of the expected error, or None when the list must be error-free)
CASES = [
    # --- envelope ---
    ("name missing", {"cniVersion": "1.0.0", "plugins": [{"type": "loopback"}]}, "name"),
    ("name with space", net({"type": "loopback"}) | {"name": "my net"}, "name"),
    ("name starting with dash", net({"type": "loopback"}) | {"name": "-x"}, "name"),
    ("name ok", net({"type": "loopback"}) | {"name": "a_b.c-1"}, None),
    ("cniVersion not string", net({"type": "loopback"}, version=1), "cniVersion"),
    ("cniVersion too new", net({"type": "loopback"}, version="1.2.0"), "cniVersion"),
    ("cniVersion unknown", net({"type": "loopback"}, version="0.5.0"), "cniVersion"),
    ("cniVersion 1.1.0", net({"type": "loopback"}, version="1.1.0"), None),
    ("cniVersions not list", net({"type": "loopback"}, cniVersions="1.0.0"), "cniVersions"),
    ("cniVersions bad entry", net({"type": "loopback"}, cniVersions=["1.0.f"]), "cniVersions[0]"),
    ("cniVersions ok", net({"type": "loopback"}, cniVersions=["0.4.0", "1.1.0"]), None),
    ("disableCheck not bool", net({"type": "loopback"}, disableCheck="yes"), "disableCheck"),
    ("disableGC number", net({"type": "loopback"}, disableGC=1), "disableGC"),
    ("loadOnlyInlined without plugins", {"cniVersion": "1.0.0", "name": "t", "loadOnlyInlinedPlugins": True}, "plugins"),
    ("plugins empty", net(), "plugins"),
    ("plugins not list", net() | {"plugins": {"type": "bridge"}}, "plugins"),
    ("plugin not object", net("bridge"), "plugins[0]"),
    ("type missing", net({"bridge": "cni0"}), "plugins[0].type"),
    ("type empty", net({"type": ""}), "plugins[0].type"),
    ("type with slash", net({"type": "../bin/sh"}), "plugins[0].type"),
    ("args, as the conventions document", net({"type": "loopback", "args": {"cni": {"labels": []}}}), None),
    ("args not an object", net({"type": "loopback", "args": "x"}), "plugins[0].args"),
    ("runtimeConfig written in a plugin is no error", net({"type": "loopback", "runtimeConfig": {}}), None),
    ("reserved prevResult", net({"type": "loopback", "prevResult": {}}), "plugins[0].prevResult"),
    ("reserved cni.dev key", net({"type": "loopback", "cni.dev/attachments": []}), 'plugins[0]["cni.dev/attachments"]'),
    ("capabilities not map", net({"type": "loopback", "capabilities": ["mac"]}), "plugins[0].capabilities"),
    ("capability not bool", net({"type": "loopback", "capabilities": {"mac": 1}}), "plugins[0].capabilities.mac"),
    ("ipam not object", net({"type": "bridge", "ipam": "host-local"}), "plugins[0].ipam"),
    ("ipam type with slash", net({"type": "bridge", "ipam": {"type": "a/b"}}), "plugins[0].ipam.type"),
    # --- bridge ---
    ("bridge full", net({"type": "bridge", "bridge": "br-test0", "isGateway": True, "isDefaultGateway": True,
                         "forceAddress": False, "ipMasq": True, "ipMasqBackend": "nftables", "mtu": 9000,
                         "hairpinMode": True, "vlan": 4094, "vlanTrunk": [{"minID": 1, "maxID": 4094}, {"id": 5}],
                         "preserveDefaultVlan": True, "macspoofchk": True, "enabledad": False, "portIsolation": True,
                         "ipam": {"type": "host-local", "subnet": "10.9.0.0/24"}}), None),
    ("bridge vlan 4095", net({"type": "bridge", "vlan": 4095}), "plugins[0].vlan"),
    ("bridge vlan negative", net({"type": "bridge", "vlan": -1}), "plugins[0].vlan"),
    ("bridge mtu fraction", net({"type": "bridge", "mtu": 1500.5}), "plugins[0].mtu"),
    ("bridge mtu whole-number float", net({"type": "bridge", "mtu": 1500.0}), None),
    ("bridge mtu string", net({"type": "bridge", "mtu": "1500"}), "plugins[0].mtu"),
    ("bridge mtu bool", net({"type": "bridge", "mtu": True}), "plugins[0].mtu"),
    ("bridge ipMasq string", net({"type": "bridge", "ipMasq": "true"}), "plugins[0].ipMasq"),
    ("bridge hairpin and promisc", net({"type": "bridge", "hairpinMode": True, "promiscMode": True}), "plugins[0]"),
    ("bridge hairpin, promisc false", net({"type": "bridge", "hairpinMode": True, "promiscMode": False}), None),
    ("bridge no container iface L2", net({"type": "bridge", "disableContainerInterface": True, "ipam": {}}), None),
    ("bridge name too long", net({"type": "bridge", "bridge": "a-very-long-bridge0"}), "plugins[0].bridge"),
    ("bridge name with slash", net({"type": "bridge", "bridge": "br/0"}), "plugins[0].bridge"),
    ("bridge gateway, two IPv4 range sets", net(dict(hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "10.8.0.0/24"}]]),
                                                     isGateway=True)), "plugins[0].ipam.ranges[1]"),
    ("bridge default gateway, subnet and an IPv4 range set", net(dict(hl(subnet="10.9.0.0/24", ranges=[[{"subnet": "10.8.0.0/24"}]]),
                                                                 isDefaultGateway=True)), "plugins[0].ipam.ranges[0]"),
    ("bridge gateway, IPv4 and IPv6 range sets", net(dict(hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "fd00::/64"}]]),
                                                          isGateway=True)), None),
    ("bridge gateway, one set of two IPv4 ranges", net(dict(hl(ranges=[[{"subnet": "10.9.0.0/24"}, {"subnet": "10.8.0.0/24"}]]),
                                                            isGateway=True)), None),
    ("bridge without gateway, two IPv4 range sets", net(hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "10.8.0.0/24"}]])), None),
    ("bridge gateway, two IPv4 range sets, forceAddress", net(dict(
        hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "10.8.0.0/24"}]]), isGateway=True, forceAddress=True)), None),
    ("bridge gateway, two IPv4 range sets, ipRanges from the runtime", net(dict(
        hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "10.8.0.0/24"}]]), isGateway=True, capabilities={"ipRanges": True})), None),
    # --- ipvlan ---
    ("ipvlan ok", net({"type": "ipvlan", "master": "eth0", "mode": "l3s", "ipam": {"type": "host-local", "subnet": "10.9.2.0/24"}}), None),
    ("ipvlan mode", net({"type": "ipvlan", "master": "eth0", "mode": "L2", "ipam": {"type": "dhcp"}}), "plugins[0].mode"),
    ("ipvlan first without ipam", net({"type": "ipvlan", "master": "eth0"}), "plugins[0].ipam"),
    ("ipvlan chained without ipam", net(PTP_HL, {"type": "ipvlan", "master": "eth0"}), None),
    # --- macvlan ---
    ("macvlan ok", net({"type": "macvlan", "master": "eth0", "mode": "passthru", "mac": "0a:58:0a:01:00:05",
                        "bcqueuelen": 1000, "linkInContainer": False, "ipam": {}}), None),
    ("macvlan mode", net({"type": "macvlan", "master": "eth0", "mode": "bridged"}), "plugins[0].mode"),
    ("macvlan mac", net({"type": "macvlan", "master": "eth0", "mac": "0a:58:0a:01:00"}), "plugins[0].mac"),
    ("macvlan master too long", net({"type": "macvlan", "master": "enp0s31f6-long-name"}), "plugins[0].master"),
    # --- ptp ---
    ("ptp ok", net(PTP_HL), None),
    ("ptp without ipam", net({"type": "ptp"}), "plugins[0].ipam"),
    ("ptp ipam without type", net({"type": "ptp", "ipam": {"subnet": "10.9.0.0/24"}}), "plugins[0].ipam.type"),
    ("ptp ipam empty type", net({"type": "ptp", "ipam": {"type": ""}}), "plugins[0].ipam.type"),
    # --- host-device ---
    ("host-device by pci", net({"type": "host-device", "pciBusID": "0000:00:1f.6"}), None),
    ("host-device by capability", net({"type": "host-device", "capabilities": {"deviceID": True}}), None),
    ("host-device no selector", net({"type": "host-device"}), "plugins[0]"),
    ("host-device kernelpath", net({"type": "host-device", "kernelpath": "/sys/class/net/eth1"}), "plugins[0].kernelpath"),
    ("host-device pci", net({"type": "host-device", "pciBusID": "00:1f.6"}), "plugins[0].pciBusID"),
    ("host-device hwaddr", net({"type": "host-device", "hwaddr": "zz:58:0a:01:00:05"}), "plugins[0].hwaddr"),
    # --- vlan ---
    ("vlan ok", net({"type": "vlan", "master": "eth0", "vlanId": 0, "ipam": {"type": "dhcp"}}), None),
    ("vlan without master", net({"type": "vlan", "vlanId": 5, "ipam": {"type": "dhcp"}}), "plugins[0].master"),
    ("vlan id 4095", net({"type": "vlan", "master": "eth0", "vlanId": 4095, "ipam": {"type": "dhcp"}}), "plugins[0].vlanId"),
    ("vlan without ipam", net({"type": "vlan", "master": "eth0", "vlanId": 5}), "plugins[0].ipam"),
    # --- loopback, dummy, tap ---
    ("loopback", net({"type": "loopback"}), None),
    ("dummy ok", net({"type": "dummy", "ipam": {"type": "static", "addresses": [{"address": "10.9.3.2/24"}]}}), None),
    ("dummy without ipam", net({"type": "dummy"}), "plugins[0].ipam"),
    ("tap ok", net({"type": "tap", "owner": 0, "group": 4294967295, "selinuxContext": "system_u:system_r:svirt_t:s0", "bridge": "br0"}), None),
    ("tap owner negative", net({"type": "tap", "owner": -1}), "plugins[0].owner"),
    ("tap group too large", net({"type": "tap", "group": 2**32}), "plugins[0].group"),
    ("tap multiQueue string", net({"type": "tap", "multiQueue": "yes"}), "plugins[0].multiQueue"),
    # --- vrf ---
    ("vrf ok", net(PTP_HL, {"type": "vrf", "vrfname": "blue", "table": 100}), None),
    ("vrf without name", net(PTP_HL, {"type": "vrf"}), "plugins[1].vrfname"),
    ("vrf name too long", net(PTP_HL, {"type": "vrf", "vrfname": "vrf-0123456789abc"}), "plugins[1].vrfname"),
    ("vrf table negative", net(PTP_HL, {"type": "vrf", "vrfname": "blue", "table": -1}), "plugins[1].table"),
    ("vrf first", net({"type": "vrf", "vrfname": "blue"}), "plugins[0].type"),
    ("vrf on 0.3.0", net(PTP_HL, {"type": "vrf", "vrfname": "blue"}, version="0.3.0"), "cniVersion"),
    # --- tuning ---
    ("tuning ok", net(PTP_HL, {"type": "tuning", "sysctl": {"net/ipv4/conf/IFNAME/arp_filter": "1"},
                               "mac": "0a:58:0a:01:00:05", "promisc": True, "mtu": 1400, "txQLen": 1000,
                               "allmulti": False}), None),
    ("tuning sysctl value int", net(PTP_HL, {"type": "tuning", "sysctl": {"net.core.somaxconn": 500}}),
     'plugins[1].sysctl["net.core.somaxconn"]'),
    ("tuning sysctl outside net", net(PTP_HL, {"type": "tuning", "sysctl": {"kernel.panic": "1"}}),
     'plugins[1].sysctl["kernel.panic"]'),
    ("tuning sysctl escaping", net(PTP_HL, {"type": "tuning", "sysctl": {"net/../kernel/panic": "1"}}),
     'plugins[1].sysctl["net/../kernel/panic"]'),
    ("tuning promisc string", net(PTP_HL, {"type": "tuning", "promisc": "on"}), "plugins[1].promisc"),
    ("tuning first", net({"type": "tuning"}), "plugins[0].type"),
    # --- portmap ---
    ("portmap ok", net(PTP_HL, {"type": "portmap", "capabilities": {"portMappings": True}, "backend": "nftables",
                                "conditionsV4": ["ip", "saddr", "10.0.0.0/8"], "snat": False, "masqAll": True}), None),
    ("portmap markMasqBit 32", net(PTP_HL, {"type": "portmap", "markMasqBit": 32}), "plugins[1].markMasqBit"),
    ("portmap mark bit and chain", net(PTP_HL, {"type": "portmap", "markMasqBit": 13, "externalSetMarkChain": "KUBE-MARK-MASQ"}),
     "plugins[1]"),
    ("portmap iptables conditions", net(PTP_HL, {"type": "portmap", "conditionsV4": ["!", "-s", "10.0.0.0/8"]}), None),
    # --- bandwidth ---
    ("bandwidth ok", net(PTP_HL, {"type": "bandwidth", "ingressRate": 8, "ingressBurst": 34359738359}), None),
    ("bandwidth zero rate without burst", net(PTP_HL, {"type": "bandwidth", "ingressRate": 0}), None),
    ("bandwidth rate without burst", net(PTP_HL, {"type": "bandwidth", "ingressRate": 1000}), "plugins[1].ingressBurst"),
    ("bandwidth burst without rate", net(PTP_HL, {"type": "bandwidth", "egressBurst": 1000}), "plugins[1].egressRate"),
    ("bandwidth burst over 4GB", net(PTP_HL, {"type": "bandwidth", "ingressRate": 8, "ingressBurst": 34359738360}),
     "plugins[1].ingressBurst"),
    ("bandwidth negative rate", net(PTP_HL, {"type": "bandwidth", "egressRate": -1, "egressBurst": 1}), "plugins[1].egressRate"),
    ("bandwidth on 0.2.0", net(PTP_HL, {"type": "bandwidth"}, version="0.2.0"), "cniVersion"),
    # --- firewall ---
    ("firewall ok", net(BRIDGE_HL, {"type": "firewall", "backend": "firewalld", "firewalldZone": "trusted",
                                    "ingressPolicy": "isolated"}), None),
    ("firewall backend nftables falls back", net(BRIDGE_HL, {"type": "firewall", "backend": "nftables"}), None),
    ("firewall backend empty, as podman writes", net(BRIDGE_HL, {"type": "firewall", "backend": ""}), None),
    ("firewall same-bridge after ptp works (a warning)", net(PTP_HL, {"type": "firewall", "ingressPolicy": "same-bridge"}), None),
    ("firewall admin chain too long", net(BRIDGE_HL, {"type": "firewall", "iptablesAdminChainName": "X" * 29}),
     "plugins[1].iptablesAdminChainName"),
    ("firewall on 0.3.1", net(BRIDGE_HL, {"type": "firewall"}, version="0.3.1"), "cniVersion"),
    # --- sbr ---
    ("sbr ok", net(PTP_HL, {"type": "sbr", "gateways": ["10.9.1.1", "fd00::1"], "addSourceHints": True}), None),
    # --- host-local ---
    ("host-local legacy", net(hl(subnet="10.9.0.0/24", rangeStart="10.9.0.10", rangeEnd="10.9.0.20", gateway="10.9.0.1",
                                 routes=[{"dst": "0.0.0.0/0", "gw": "10.9.0.1"}], dataDir="/run/ipam")), None),
    ("host-local no ranges", net(hl()), "plugins[0].ipam.ranges"),
    ("host-local ranges from capability", net(dict(hl(), capabilities={"ipRanges": True})), None),
    ("host-local ranges empty", net(hl(ranges=[])), "plugins[0].ipam.ranges"),
    ("host-local range set empty", net(hl(ranges=[[]])), "plugins[0].ipam.ranges[0]"),
    ("host-local range without subnet", net(hl(ranges=[[{"gateway": "10.0.0.1"}]])), "plugins[0].ipam.ranges[0][0].subnet"),
    ("host-local host bits", net(hl(subnet="10.9.0.1/24")), "plugins[0].ipam.subnet"),
    ("host-local /31", net(hl(subnet="10.9.0.0/31")), "plugins[0].ipam.subnet"),
    ("host-local /30", net(hl(subnet="10.9.0.0/30")), None),
    ("host-local /127", net(hl(subnet="fd00::/127")), "plugins[0].ipam.subnet"),
    ("host-local leading zero", net(hl(subnet="10.09.0.0/24")), "plugins[0].ipam.subnet"),
    ("host-local prefix leading zero", net(hl(subnet="10.9.0.0/024")), "plugins[0].ipam.subnet"),
    ("host-local rangeStart outside", net(hl(ranges=[[{"subnet": "10.9.0.0/24", "rangeStart": "10.9.1.5"}]])),
     "plugins[0].ipam.ranges[0][0].rangeStart"),
    ("host-local rangeEnd outside", net(hl(ranges=[[{"subnet": "10.9.0.0/24", "rangeEnd": "10.8.0.5"}]])),
     "plugins[0].ipam.ranges[0][0].rangeEnd"),
    ("host-local start after end", net(hl(ranges=[[{"subnet": "10.9.0.0/24", "rangeStart": "10.9.0.9", "rangeEnd": "10.9.0.8"}]])),
     "plugins[0].ipam.ranges[0][0].rangeStart"),
    ("host-local gateway outside is not checked", net(hl(subnet="10.9.0.0/24", gateway="10.9.1.1")), None),
    ("host-local gateway of the other family is not checked", net(hl(subnet="10.9.0.0/24", gateway="fd00::1")), None),
    ("host-local IPv6 gateway outside is allowed", net(hl(subnet="fd00:1::/64", gateway="fd00:2::1")), None),
    ("host-local gateway not IP", net(hl(subnet="10.9.0.0/24", gateway="10.9.0.256")), "plugins[0].ipam.gateway"),
    ("host-local mixed families in a set", net(hl(ranges=[[{"subnet": "10.9.0.0/24"}, {"subnet": "fd00::/64"}]])),
     "plugins[0].ipam.ranges[0][1].subnet"),
    ("host-local overlap in a set", net(hl(ranges=[[{"subnet": "10.9.0.0/24"}, {"subnet": "10.9.0.128/25"}]])),
     "plugins[0].ipam.ranges[0][1].subnet"),
    ("host-local two ranges in a set", net(hl(ranges=[[{"subnet": "10.9.0.0/24"}, {"subnet": "10.9.1.0/24"}]])), None),
    ("host-local sets overlap", net(hl(ranges=[[{"subnet": "10.9.0.0/16"}], [{"subnet": "10.9.4.0/24"}]])),
     "plugins[0].ipam.ranges[1][0].subnet"),
    ("host-local two v4 sets on 0.2.0", net(hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "10.8.0.0/24"}]]), version="0.2.0"),
     "cniVersion"),
    ("host-local dual stack on 0.2.0", net(hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "fd00::/64"}]]), version="0.2.0"),
     None),
    ("host-local route without dst", net(hl(subnet="10.9.0.0/24", routes=[{"gw": "10.9.0.1"}])), "plugins[0].ipam.routes[0].dst"),
    ("host-local route gw", net(hl(subnet="10.9.0.0/24", routes=[{"dst": "0.0.0.0/0", "gw": "x"}])), "plugins[0].ipam.routes[0].gw"),
    ("host-local route dst not CIDR", net(hl(subnet="10.9.0.0/24", routes=[{"dst": "0.0.0.0"}])), "plugins[0].ipam.routes[0].dst"),
    # --- static ---
    ("static without prefix", net({"type": "bridge", "ipam": {"type": "static", "addresses": [{"address": "10.0.0.5"}]}}),
     "plugins[0].ipam.addresses[0].address"),
    ("static address missing", net({"type": "bridge", "ipam": {"type": "static", "addresses": [{"gateway": "10.0.0.1"}]}}),
     "plugins[0].ipam.addresses[0].address"),
    ("static two v4 on 0.2.0", net({"type": "bridge", "ipam": {"type": "static", "addresses": [
        {"address": "10.0.0.5/24"}, {"address": "10.0.1.5/24"}]}}, version="0.2.0"), "cniVersion"),
    ("static dns", net({"type": "bridge", "ipam": {"type": "static", "addresses": [{"address": "10.0.0.5/24"}],
                                                   "dns": {"nameservers": ["10.0.0.1"], "domain": "x", "options": ["ndots:2"]}}}), None),
    ("static dns nameserver name", net({"type": "bridge", "ipam": {
        "type": "static", "addresses": [{"address": "10.0.0.5/24"}], "dns": {"nameservers": ["dns.example"]}}}), None),
    # --- dhcp ---
    ("dhcp ok", net({"type": "macvlan", "master": "eth0", "ipam": {"type": "dhcp", "daemonSocketPath": "/run/cni/dhcp.sock",
                                                                   "request": [{"skipDefault": True, "option": "255"}],
                                                                   "provide": [{"option": "user-class", "value": "x"}],
                                                                   "priority": 5}}), None),
    # --- formats only apply to strings; the type check speaks for other values ---
    ("MAC not a string", net({"type": "macvlan", "master": "eth0", "mac": 5}), "plugins[0].mac"),
    ("subnet not a string", net(hl(subnet=5)), "plugins[0].ipam.subnet"),
    # --- keys as Go reads them ---
    ("case variant is validated as its canonical key", net({"type": "bridge", "VLAN": 5000}), "plugins[0].vlan"),
    ("third-party plugin", net({"type": "flannel", "delegate": {"anything": 1}}), None),
    ("third-party IPAM", net({"type": "macvlan", "master": "eth0", "ipam": {"type": "whereabouts", "range": "x"}}), None),
]


@pytest.mark.parametrize("conf, expected", [pytest.param(c, e, id=i) for i, c, e in CASES])
def test_rules(conf, expected):
    paths = error_paths(conf)
    if expected is None:
        assert paths == []
    else:
        assert expected in paths


def test_every_reference_plugin_and_ipam_type_has_cases():
    ids = " ".join(i for i, _c, _e in CASES)
    for plugin_type in list(PLUGIN_SCHEMAS) + list(IPAM_SCHEMAS):
        assert plugin_type in ids, plugin_type


# (id, conflist, JSON path of the expected warning)
WARNING_CASES = [
    ("cniVersion missing", {"name": "t", "plugins": [{"type": "loopback"}]}, "cniVersion"),
    ("cniVersions newer than known", net({"type": "loopback"}, cniVersions=["1.0.0", "1.3.0"]), "cniVersions[1]"),
    ("flag as string", net({"type": "loopback"}, disableCheck="True"), "disableCheck"),
    ("plugins absent", {"cniVersion": "1.0.0", "name": "t"}, "plugins"),
    ("envelope key case", net({"type": "loopback"}) | {"CNIVersion": "1.0.0"}, "CNIVersion"),
    ("plugin cniVersion differs", net({"type": "loopback", "cniVersion": "0.3.1"}), "plugins[0].cniVersion"),
    ("unknown capability", net({"type": "loopback", "capabilities": {"portmappings": True}}), "plugins[0].capabilities.portmappings"),
    ("key case variant", net({"type": "bridge", "isgateway": True}), "plugins[0].isgateway"),
    ("unknown key", net({"type": "bridge", "ipmasq_backend": "nftables"}), "plugins[0].ipmasq_backend"),
    ("unknown IPAM key", net(hl(subnet="10.9.0.0/24", gatway="10.9.0.1")), "plugins[0].ipam.gatway"),
    ("unknown nested key", net(hl(ranges=[[{"subnet": "10.9.0.0/24", "start": "10.9.0.2"}]])), "plugins[0].ipam.ranges[0][0].start"),
    ("null value", net({"type": "bridge", "mtu": None}), "plugins[0].mtu"),
    ("third-party plugin", net({"type": "calico"}), "plugins[0].type"),
    ("third-party IPAM", net({"type": "macvlan", "master": "eth0", "ipam": {"type": "whereabouts"}}), "plugins[0].ipam.type"),
    ("bridge ipMasq without IPAM", net({"type": "bridge", "ipMasq": True}), "plugins[0].ipMasq"),
    ("macvlan without master", net({"type": "macvlan", "ipam": {}}), "plugins[0].master"),
    ("vlan without vlanId", net({"type": "vlan", "master": "eth0", "ipam": {"type": "dhcp"}}), "plugins[0].vlanId"),
    ("host-device several selectors", net({"type": "host-device", "device": "eth1", "pciBusID": "0000:00:1f.6"}), "plugins[0]"),
    ("portmap without capability", net(PTP_HL, {"type": "portmap"}), "plugins[1].capabilities"),
    ("bandwidth after macvlan", net({"type": "macvlan", "master": "eth0", "ipam": {}}, {"type": "bandwidth"}), "plugins[1].type"),
    ("bandwidth removed keys", net(PTP_HL, {"type": "bandwidth", "shapedSubnets": ["10.0.0.0/8"]}), "plugins[1].shapedSubnets"),
    ("static gateway outside", net({"type": "bridge", "ipam": {"type": "static", "addresses": [
        {"address": "10.0.0.5/24", "gateway": "10.0.1.1"}]}}), "plugins[0].ipam.addresses[0].gateway"),
    ("IPv6 gateway outside", net(hl(subnet="fd00:1::/64", gateway="fd00:2::1")), "plugins[0].ipam.gateway"),
    ("dhcp daemon", net({"type": "macvlan", "master": "eth0", "ipam": {"type": "dhcp"}}), "plugins[0].ipam.type"),
    ("runtimeConfig written in a plugin", net({"type": "loopback", "runtimeConfig": {}}), "plugins[0].runtimeConfig"),
    ("bridge gateway, two IPv4 range sets, forceAddress", net(dict(
        hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "10.8.0.0/24"}]]), isGateway=True, forceAddress=True)),
     "plugins[0].ipam.ranges[1]"),
]


@pytest.mark.parametrize("conf, expected", [pytest.param(c, e, id=i) for i, c, e in WARNING_CASES])
def test_warnings(conf, expected):
    assert expected in warning_paths(conf)


def test_clean_list_has_no_warnings():
    bridge = hl(ranges=[[{"subnet": "10.9.0.0/24"}]])
    report = validate_network_list(net(bridge, {"type": "portmap", "capabilities": {"portMappings": True}}))
    assert report.ok and report.warnings == []


def test_messages_name_path_value_and_suggestion():
    report = validate_network_list(net({"type": "bridge", "mtu": 1500.5, "ipmasq": "true", "isGatway": True}))
    by_path = {f.path: f for f in report.errors + report.warnings}
    assert by_path["plugins[0].mtu"].value == 1500.5
    assert "1500.5" in by_path["plugins[0].mtu"].message
    assert "'ipMasq'" in by_path["plugins[0].ipmasq"].message
    assert "did you mean 'isGateway'" in by_path["plugins[0].isGatway"].message
    assert by_path["plugins[0].ipMasq"].to_dict() == {
        "path": "plugins[0].ipMasq", "message": "must be a boolean (true or false, not a string)", "value": "true"}


@pytest.mark.parametrize("plugin, path, message", [
    ({"type": "bandwidth", "ingressRate": 1, "ingressBurst": -1}, "plugins[1].ingressBurst", "must be at least 0"),
    ({"type": "bandwidth", "ingressRate": 1, "ingressBurst": 2**40}, "plugins[1].ingressBurst", "burst cannot be more than 4GB"),
    ({"type": "sbr", "gateways": ["gw"]}, "plugins[1].gateways[0]", "is not an IPv4 or IPv6 address"),
    ({"type": "sbr", "gateways": ["10.0.0.1", "fd00::1", "10.0.0.2"]}, "plugins[1].gateways",
     "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)"),
    ({"type": "bridge", "vlanTrunk": [{"minID": 0, "maxID": 5}]}, "plugins[1].vlanTrunk[0].minID",
     "must be a VLAN ID from 1 to 4094"),
    ({"type": "bridge", "vlanTrunk": [{"maxID": 5}]}, "plugins[1].vlanTrunk[0].minID",
     "is required: minID and maxID must be configured together"),
    ({"type": "host-device", "kernelpath": "/dev/x"}, "plugins[1].kernelpath", "must be absolute and begin with /sys/devices/"),
])
def test_rule_messages_stay_with_their_rule(plugin, path, message):
    # A binary of the newest code, so that rules of recent releases are errors.
    report = validate_network_list(net(PTP_HL, plugin), installed_versions=lambda _t: ["1.0.0", "1.1.0"],
                                   installed_release=lambda _t: "99.0.0")
    assert [f.message for f in report.errors if f.path == path][:1] == [message]


def test_input_is_not_modified():
    conf = net({"type": "bridge", "MTU": 1500, "vlan": None})
    snapshot = json.loads(json.dumps(conf))
    validate_network_list(conf)
    assert conf == snapshot


def test_json_path():
    assert json_path(["plugins", 0, "ipam", "ranges", 0, 1, "subnet"]) == "plugins[0].ipam.ranges[0][1].subnet"
    assert json_path(["plugins", 2, "sysctl", "net.core.somaxconn"]) == 'plugins[2].sysctl["net.core.somaxconn"]'
    assert json_path([]) == ""


def test_not_an_object():
    assert error_paths(["not", "a", "list"]) == [""]


# --- parsing text -----------------------------------------------------------------------------------

def test_duplicate_keys():
    text = ('{"cniVersion": "1.0.0", "name": "t", "name": "u", "plugins": [{"type": "ptp", "ipam": {"type": "host-local",'
            ' "subnet": "10.9.0.0/24"}}, {"type": "tuning", "sysctl": {"net.a": "1", "net.a": "2"}}]}')
    data, report = validate_text(text)
    assert data["name"] == "u"
    assert [f.path for f in report.errors] == ['plugins[1].sysctl["net.a"]']
    assert "name" in [f.path for f in report.warnings]


def test_duplicate_sysctl_keys_are_an_error_of_tuning_only():
    """tuning rejects a duplicated sysctl key; any other plugin's sysctl map keeps the last value."""
    template = ('{"cniVersion": "1.0.0", "name": "t", "plugins": [{"type": "ptp", "ipam": {"type": "host-local",'
                ' "subnet": "10.9.0.0/24"}}, {"type": "%s", "sysctl": {"net.a": "1", "net.a": "2"}}]}')
    _data, report = validate_text(template % "cnit-third-party")
    assert report.errors == []
    assert 'plugins[1].sysctl["net.a"]' in [f.path for f in report.warnings]
    _data, report = validate_text(template % "tuning")
    assert [f.path for f in report.errors] == ['plugins[1].sysctl["net.a"]']
    assert "tuning plugin rejects them" in report.errors[0].message


def test_not_json():
    data, report = parse_conflist_text(b"{")
    assert data is None and [f.path for f in report.errors] == [""]


# --- against the installed binaries --------------------------------------------------------------

DEBIAN = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"]
CURRENT = DEBIAN + ["1.1.0"]


def installed(table):
    def lookup(plugin_type):
        if plugin_type not in table:
            raise PluginNotFoundError(plugin_type, ["/usr/lib/cni"])
        return table[plugin_type]
    return lookup


def test_version_not_supported_by_installed_binary():
    report = validate_network_list(net(BRIDGE_HL, version="1.1.0"),
                                   installed_versions=installed({"bridge": DEBIAN, "host-local": DEBIAN}))
    assert [f.path for f in report.errors] == ["cniVersion", "cniVersion"]
    assert "installed bridge plugin (plugins[0].type)" in report.errors[0].message
    assert "1.0.0" in report.errors[0].message


def test_version_not_supported_names_the_highest_common_version_and_newer_plugins():
    # Debian 11's plugins 0.9.0 stop at spec 0.4.0; the default cniVersion is 1.0.0.
    bullseye = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0"]
    report = validate_network_list(net(BRIDGE_HL), installed_versions=installed({"bridge": bullseye, "host-local": DEBIAN}))
    assert [f.path for f in report.errors] == ["cniVersion"]
    assert "set cni_version: 0.4.0" in report.errors[0].message
    assert "or install plugins that support 1.0.0" in report.errors[0].message


def test_cni_versions_negotiate_down_to_installed_binaries():
    conf = net(BRIDGE_HL, version="1.1.0", cniVersions=["1.0.0", "1.1.0"])
    assert error_paths(conf, installed_versions=installed({"bridge": DEBIAN, "host-local": DEBIAN})) == []


def test_missing_binary():
    report = validate_network_list(net(BRIDGE_HL), installed_versions=installed({"bridge": CURRENT}))
    assert [f.path for f in report.errors] == ["plugins[0].ipam.type"]
    assert 'failed to find plugin "host-local"' in report.errors[0].message


def test_key_newer_than_installed_binary():
    conf = net(dict(BRIDGE_HL, ipMasq=True, ipMasqBackend="nftables"))
    old = validate_network_list(conf, installed_versions=installed({"bridge": DEBIAN, "host-local": DEBIAN}))
    new = validate_network_list(conf, installed_versions=installed({"bridge": CURRENT, "host-local": CURRENT}))
    assert "plugins[0].ipMasqBackend" in [f.path for f in old.warnings]
    assert "plugins[0].ipMasqBackend" not in [f.path for f in new.warnings]


# --- across the host ---------------------------------------------------------------------------------

def other(name, source, *plugins):
    return SimpleNamespace(name=name, source=source, plugins=list(plugins))


def test_same_name_in_a_file_read_earlier():
    others = [other("t", "/etc/cni/net.d/05-t.conflist", {"type": "loopback"})]
    assert error_paths(net({"type": "loopback"}), other_networks=others, source="/etc/cni/net.d/10-t.conflist") == ["name"]


def test_same_name_in_a_file_read_later():
    others = [other("t", "/etc/cni/net.d/20-t.conflist", {"type": "loopback"}),
              other("t", "/etc/cni/net.d/01-t.conf", {"type": "loopback"})]
    report = validate_network_list(net({"type": "loopback"}), other_networks=others, source="/etc/cni/net.d/10-t.conflist")
    assert report.ok and [f.path for f in report.warnings] == ["name", "name"]


def test_own_file_is_not_a_conflict():
    others = [other("t", "/etc/cni/net.d/10-t.conflist", hl(subnet="10.9.0.0/24"))]
    assert error_paths(net(hl(subnet="10.9.0.0/24")), other_networks=others, source="/etc/cni/net.d/10-t.conflist") == []


def test_overlapping_subnets_between_networks():
    others = [other("u", "/etc/cni/net.d/20-u.conflist", dict(hl(ranges=[[{"subnet": "10.9.0.0/16"}]]), bridge="br-u"))]
    report = validate_network_list(net(hl(subnet="10.9.3.0/24")), other_networks=others, source="/x/10-t.conflist")
    assert [f.path for f in report.errors] == ["plugins[0].ipam.subnet"]
    assert "network 'u'" in report.errors[0].message


def test_disjoint_subnets_between_networks():
    others = [other("u", "/etc/cni/net.d/20-u.conflist", dict(hl(subnet="10.8.0.0/24"), bridge="br-u"))]
    assert error_paths(net(hl(subnet="10.9.0.0/24")), other_networks=others) == []


def test_one_bridge_with_different_subnets():
    others = [other("u", "/etc/cni/net.d/20-u.conflist", {"type": "bridge", "bridge": "cni0",
                                                          "ipam": {"type": "host-local", "subnet": "10.8.0.0/24"}})]
    report = validate_network_list(net(hl(subnet="10.9.0.0/24")), other_networks=others)
    assert [f.path for f in report.errors] == ["plugins"]
    assert "bridge 'cni0'" in report.errors[0].message


def test_two_ipv4_range_sets_on_a_gateway_bridge_name_both_sets_and_the_failure():
    bridge = dict(hl(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "10.8.0.0/24", "gateway": "10.8.0.254"}]]),
                  bridge="cnit-br0", isGateway=True)
    (finding,) = validate_network_list(net(bridge)).errors
    assert finding.path == "plugins[0].ipam.ranges[1]"
    assert finding.value == [{"subnet": "10.8.0.0/24", "gateway": "10.8.0.254"}]
    assert "bridge cnit-br0" in finding.message and "10.9.0.1/24 (plugins[0].ipam.ranges[0])" in finding.message
    assert "already has an IP address different from 10.8.0.254/24" in finding.message
    assert "forceAddress" not in finding.message


def test_two_ipv4_range_sets_on_a_gateway_bridge_with_force_address_warn_that_one_gateway_is_lost():
    bridge = dict(hl(subnet="10.9.0.0/24", ranges=[[{"subnet": "10.8.0.0/24"}]]), isGateway=True, forceAddress=True)
    (finding,) = [f for f in validate_network_list(net(bridge)).warnings if f.path == "plugins[0].ipam.ranges[0]"]
    assert "keeps only 10.8.0.1/24" in finding.message and "10.9.0.1/24 (plugins[0].ipam.subnet)" in finding.message


@pytest.mark.parametrize("plugin, says", [
    ({"type": "loopback", "runtimeConfig": {"mac": "0a:58:00:00:00:01"}},
     "enables no capability, so libcni (1.1 and 1.3) and cnikit send it to the plugin as written"),
    ({"type": "tuning", "capabilities": {"mac": True}, "runtimeConfig": {"mac": "0a:58:00:00:00:01"}},
     "replace it whole (not merged) with the capability arguments when the runtime supplies one for a capability "
     "this plugin enables (mac), and send it as written otherwise"),
])
def test_runtime_config_written_in_a_file_is_a_warning_saying_what_libcni_does(plugin, says):
    report = validate_network_list(net(PTP_HL, plugin) if plugin["type"] == "tuning" else net(plugin))
    (finding,) = [f for f in report.warnings if f.path.endswith(".runtimeConfig")]
    assert report.errors == []
    assert finding.message.startswith("is reserved for the runtime, which builds it from capability arguments")
    assert says in finding.message


# --- corpus ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted((FIXTURES / "valid").glob("*.conflist")), ids=lambda p: p.name)
def test_corpus_valid(path):
    data, report = validate_text(path.read_bytes())
    assert data is not None
    assert [str(f) for f in report.errors] == []


@pytest.mark.parametrize("path", sorted((FIXTURES / "valid").glob("*.conf")), ids=lambda p: p.name)
def test_corpus_valid_single_plugin_conf_given_as_config(path):
    """Operators migrating /etc/cni/net.d pass its .conf files to cni_network as they are: libcni
    loads each as a one-plugin list (ConfListFromConf), and so does cni_network."""
    single = json.loads(path.read_text())
    conf, report, converted = build_conflist(single["name"], config=path.read_text())
    assert converted
    assert conf["name"] == single["name"] and conf["cniVersion"] == single["cniVersion"]
    assert conf["plugins"] == [single]
    validate_network_list(conf, report=report)
    assert [str(f) for f in report.errors] == []


EXPECTED_INVALID = json.loads((FIXTURES / "invalid" / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED_INVALID))
def test_corpus_invalid(name):
    _data, report = validate_text((FIXTURES / "invalid" / name).read_bytes())
    assert EXPECTED_INVALID[name] in [f.path for f in report.errors]


def test_corpus_invalid_is_complete():
    assert sorted(p.name for p in (FIXTURES / "invalid").glob("*.conflist")) == sorted(EXPECTED_INVALID)


# --- what the plugins and libcni really do (seen beside v1.9.1 and real runtimes) --------------------

def test_whole_number_floats_are_read_as_libcni_passes_them():
    # libcni re-encodes each plugin object through a Go map: 1500.0 and 1e6 reach the plugin as
    # 1500 and 1000000; a fraction, or a number too large for Go to print without an exponent, does not.
    conf = net({"type": "bridge", "mtu": 1500.0, "ipam": {"type": "host-local", "subnet": "10.9.0.0/24"}},
               {"type": "bandwidth", "ingressRate": 8e6, "ingressBurst": 1e6})
    assert error_paths(conf) == []
    data, report = validate_text(b'{"cniVersion": "1.0.0", "name": "t", "plugins": [{"type": "bridge", "mtu": 1.5e3}]}')
    assert data is not None and report.errors == []
    assert "plugins[1].ingressRate" in error_paths(net(PTP_HL, {"type": "bandwidth", "ingressRate": 1e21, "ingressBurst": 1}))


def test_ip_masq_backend_is_not_checked_while_ip_masq_is_off():
    for off in ({}, {"ipMasq": False}):
        for plugin in (BRIDGE_HL, PTP_HL):
            report = validate_network_list(net(dict(plugin, ipMasqBackend="nft", **off)))
            assert report.errors == []
            assert [f.message for f in report.warnings if f.path == "plugins[0].ipMasqBackend"] == [
                "has no effect while ipMasq is off: the plugin ignores it then"]
    current = installed({"bridge": CURRENT, "host-local": CURRENT})
    assert "plugins[0].ipMasqBackend" in error_paths(net(dict(BRIDGE_HL, ipMasq=True, ipMasqBackend="nft")),
                                                     installed_versions=current)


def test_cni_versions_without_cni_version_run_at_the_highest_libcni_supports():
    conf = {"name": "t", "cniVersions": ["0.4.0", "1.0.0"], "plugins": [BRIDGE_HL]}
    report = validate_network_list(conf, installed_versions=installed({"bridge": CURRENT, "host-local": CURRENT}))
    assert report.errors == [] and "cniVersion" not in [f.path for f in report.warnings]
    # No declared version that every binary supports: the list runs at libcni's pick, not at 0.1.0.
    too_old = installed({"bridge": ["0.1.0", "0.2.0", "0.3.0", "0.3.1"], "host-local": CURRENT})
    report = validate_network_list(conf, installed_versions=too_old)
    assert [(f.path, f.value) for f in report.errors] == [("cniVersion", "1.0.0")]


def test_ptp_with_static_addresses_only_from_the_ips_capability_fails_in_the_binary():
    static_ips = {"type": "ptp", "capabilities": {"ips": True}, "ipam": {"type": "static"}}
    report = validate_network_list(net(static_ips))
    assert [f.path for f in report.errors] == ["plugins[0].capabilities.ips"]
    assert "no gateway" in report.errors[0].message
    with_addresses = dict(static_ips, ipam={"type": "static", "addresses": [
        {"address": "10.9.3.2/24", "gateway": "10.9.3.1"}]})
    report = validate_network_list(net(with_addresses))
    assert report.errors == [] and "plugins[0].capabilities.ips" in [f.path for f in report.warnings]
    bridge = dict(static_ips, type="bridge")
    assert "plugins[0].capabilities.ips" not in error_paths(net(bridge)) + warning_paths(net(bridge))


def test_host_local_flat_subnet_form_is_warned_of_for_podman():
    report = validate_network_list(net(BRIDGE_HL))
    assert report.errors == []
    (warning,) = [f for f in report.warnings if f.path == "plugins[0].ipam.subnet"]
    assert "podman" in warning.message and "ranges" in warning.message
    assert "plugins[0].ipam.subnet" not in warning_paths(net(hl(ranges=[[{"subnet": "10.9.0.0/24"}]])))
