# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_vxlan's logic: options, the device as iproute2 shows it, the plan; cni_underlay_info's
uplink; adjacency. The device on a real kernel is the molecule scenario segments'."""

from __future__ import annotations

import ipaddress
import json

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._adjacency import reason_not_adjacent
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._rtnetlink import RouteAnswer
from ansible_collections.cnikit.cni.plugins.module_utils._underlay import find_uplink
from ansible_collections.cnikit.cni.plugins.module_utils._vxlan import (
    Device, State, make_plan, parse_options, parse_state)
from ansible_collections.cnikit.cni.plugins.module_utils._vxlan_task import ARGUMENT_SPEC

PEER_B = {"name": "b", "vtep": "10.244.2.0", "mac": "0a:58:0a:f4:02:00", "underlay": "10.2.0.5"}
PEER_C = {"name": "c", "vtep": "10.244.3.0", "mac": "0a:58:0a:f4:03:00", "underlay": "10.3.0.5"}


def params(**overrides) -> dict:
    values = {name: spec.get("default") for name, spec in ARGUMENT_SPEC.all_options().items()}
    values.update(local="10.1.0.1", dev="eth1", vtep="10.244.1.0", mac="0a:58:0a:f4:01:00", peers=[PEER_B, PEER_C])
    values.update(overrides)
    return values


def desired(**overrides) -> State:
    return parse_options(params(**overrides)).desired


def argv_of(steps) -> list:
    return [" ".join(step.argv) for step in steps]


def test_a_missing_device_is_made_with_its_address_and_every_peers_entries():
    steps = argv_of(make_plan(desired(), State(device=None)))
    assert steps == [
        "ip link add cni-vxlan0 address 0a:58:0a:f4:01:00 type vxlan id 1 dstport 8472 local 10.1.0.1 dev eth1 nolearning",
        "ip addr add 10.244.1.0/32 dev cni-vxlan0",
        "ip link set cni-vxlan0 up",
        "ip neigh replace 10.244.2.0 lladdr 0a:58:0a:f4:02:00 dev cni-vxlan0 nud permanent",
        "ip neigh replace 10.244.3.0 lladdr 0a:58:0a:f4:03:00 dev cni-vxlan0 nud permanent",
        "bridge fdb replace 0a:58:0a:f4:02:00 dev cni-vxlan0 dst 10.2.0.5 self permanent",
        "bridge fdb replace 0a:58:0a:f4:03:00 dev cni-vxlan0 dst 10.3.0.5 self permanent",
    ]


def test_the_device_as_desired_needs_nothing():
    assert make_plan(desired(), desired()) == []


def test_a_peer_that_moves_gets_its_fdb_entry_replaced_only():
    moved = desired(peers=[PEER_B, dict(PEER_C, underlay="10.3.0.99")])
    assert argv_of(make_plan(moved, desired())) == [
        "bridge fdb replace 0a:58:0a:f4:03:00 dev cni-vxlan0 dst 10.3.0.99 self permanent"]


def test_a_peer_that_leaves_loses_its_neighbour_and_fdb_entry():
    assert argv_of(make_plan(desired(peers=[PEER_B]), desired())) == [
        "ip neigh delete 10.244.3.0 dev cni-vxlan0",
        "bridge fdb delete 0a:58:0a:f4:03:00 dev cni-vxlan0 dst 10.3.0.5 self"]


def test_entries_nobody_asked_for_go():
    current = desired()
    stale = State(device=current.device, neighbours={**current.neighbours, "10.244.9.0": "0a:58:0a:f4:09:00"},
                  fdb={**current.fdb, "0a:58:0a:f4:09:00": "10.9.0.5"})
    assert argv_of(make_plan(current, stale)) == [
        "ip neigh delete 10.244.9.0 dev cni-vxlan0",
        "bridge fdb delete 0a:58:0a:f4:09:00 dev cni-vxlan0 dst 10.9.0.5 self"]


@pytest.mark.parametrize("change", [{"vni": 7}, {"port": 4789}, {"local": "10.1.0.2"}, {"dev": "eth2"}])
def test_a_device_made_with_other_settings_is_made_again(change):
    steps = argv_of(make_plan(desired(**change), desired()))
    assert steps[0] == "ip link delete cni-vxlan0"
    assert steps[1].startswith("ip link add cni-vxlan0 ")
    assert len(steps) == 1 + 7  # made again with every entry, as from nothing


def test_a_learning_device_is_made_again_without_learning():
    current = desired()
    learning = State(device=Device(**{**current.device.__dict__, "learning": True}), neighbours=current.neighbours,
                     fdb=current.fdb)
    assert argv_of(make_plan(current, learning))[:2] == [
        "ip link delete cni-vxlan0", argv_of(make_plan(current, State(device=None)))[0]]


def test_a_new_vtep_address_replaces_the_old_and_a_down_device_goes_up():
    current = desired()
    old = State(device=Device(**{**current.device.__dict__, "addresses": ("10.244.7.0/32",), "up": False}),
                neighbours=current.neighbours, fdb=current.fdb)
    assert argv_of(make_plan(current, old)) == [
        "ip addr delete 10.244.7.0/32 dev cni-vxlan0", "ip addr add 10.244.1.0/32 dev cni-vxlan0",
        "ip link set cni-vxlan0 up"]


def test_absent_deletes_the_device_and_nothing_when_there_is_none():
    assert argv_of(make_plan(None, desired())) == ["ip link delete cni-vxlan0"]
    assert make_plan(None, State(device=None)) == []


def test_the_device_as_iproute2_shows_it_is_read_back_as_desired():
    link = [{"ifname": "cni-vxlan0", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
             "address": "0a:58:0a:f4:01:00",
             "linkinfo": {"info_kind": "vxlan", "info_data": {"id": 1, "local": "10.1.0.1", "link": "eth1",
                                                              "port": 8472, "learning": False}},
             "addr_info": [{"family": "inet", "local": "10.244.1.0", "prefixlen": 32},
                           {"family": "inet6", "local": "fe80::858:aff:fef4:100", "prefixlen": 64}]}]
    neigh = [{"dst": "10.244.2.0", "lladdr": "0a:58:0a:f4:02:00", "state": ["PERMANENT"]},
             {"dst": "10.244.3.0", "lladdr": "0a:58:0a:f4:03:00", "state": ["PERMANENT"]}]
    fdb = [{"mac": "0a:58:0a:f4:02:00", "dst": "10.2.0.5", "flags": ["self"], "state": "permanent"},
           {"mac": "0a:58:0a:f4:03:00", "dst": "10.3.0.5", "flags": ["self"], "state": "permanent"}]
    current = parse_state("cni-vxlan0", json.dumps(link), json.dumps(neigh), json.dumps(fdb))
    assert current == desired()
    assert make_plan(desired(), current) == []


def test_an_interface_of_another_kind_by_that_name_is_not_touched():
    link = [{"ifname": "cni-vxlan0", "address": "aa:bb:cc:dd:ee:ff", "linkinfo": {"info_kind": "bridge"}}]
    with pytest.raises(ConfigError, match="kind bridge"):
        parse_state("cni-vxlan0", json.dumps(link), "[]", "[]")


@pytest.mark.parametrize("overrides, path, value", [
    ({"vni": 2**24}, "vni", 2**24),
    ({"port": 0}, "port", 0),
    ({"mac": "0a:58:0a:f4:01"}, "mac", "0a:58:0a:f4:01"),
    ({"mac": "01:00:5e:00:00:01"}, "mac", "01:00:5e:00:00:01"),
    ({"vtep": "fd00::1"}, "vtep", "fd00::1"),
    ({"dev": "cni-vxlan0"}, "dev", "cni-vxlan0"),
    ({"peers": [dict(PEER_B, mac="zz")]}, "peers[0].mac", "zz"),
    ({"peers": [dict(PEER_B, underlay="fd00::5")]}, "peers[0].underlay", "fd00::5"),
    ({"peers": [PEER_B, dict(PEER_C, vtep=PEER_B["vtep"])]}, "peers[1]", PEER_B["vtep"]),
    ({"peers": [dict(PEER_B, mac="0a:58:0a:f4:01:00")]}, "peers[0]", "0a:58:0a:f4:01:00"),
])
def test_bad_input_names_the_field_and_the_value(overrides, path, value):
    with pytest.raises(ConfigError) as raised:
        parse_options(params(**overrides))
    assert raised.value.path == path and raised.value.value == value


def test_the_uplink_is_the_interface_holding_the_address():
    links = [{"ifname": "lo", "mtu": 65536, "addr_info": [{"local": "127.0.0.1"}]},
             {"ifname": "eth1", "mtu": 9000, "addr_info": [{"local": "fd00::1"}, {"local": "10.1.0.1"}]}]
    assert find_uplink(json.dumps(links), ipaddress.ip_address("10.1.0.1")) == ("eth1", 9000)
    with pytest.raises(ConfigError, match="no interface of this host holds"):
        find_uplink(json.dumps(links), ipaddress.ip_address("10.1.0.2"))


@pytest.mark.parametrize("answer, reason", [
    (RouteAnswer(type=1, gateway=None, oif=3), ""),
    (RouteAnswer(type=1, gateway=ipaddress.ip_address("10.1.0.254"), oif=3), "via 10.1.0.254 dev eth1"),
    (RouteAnswer(type=2, gateway=None, oif=1), "an address of this host"),
    (RouteAnswer(type=7, gateway=None, oif=0), "type 7"),
    (OSError(101, "Network is unreachable"), "Network is unreachable"),
])
def test_a_peer_is_adjacent_only_when_the_kernel_answers_no_gateway(answer, reason):
    found = reason_not_adjacent(answer, {3: "eth1", 1: "lo"}.get)
    assert (found == "") if not reason else (reason in found)
