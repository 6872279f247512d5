# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dual-stack allocation (_allocation.allocate_stack): each member's IPv6 subnet follows the
IPv4 rules (lowest free, pins, no moves of live hosts, released, rebuilt from records) in the
file's keys ending in _v6; a file of one family keeps working; bad input names the key."""

from __future__ import annotations

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._allocation import allocate_stack
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError

CIDR, CIDR_V6 = "10.244.0.0/16", "fd44::/48"
FILE = "/inv/cni_cluster_subnets.yml"


def member(number: int, **state) -> dict:
    return {"address": f"192.0.2.{number}", "address_v6": f"2001:db8::{number}", "in_play": True,
            "recorded": None, "recorded_v6": None, "attachments": 0, **state}


def group(*names: str, **states) -> dict:
    return {name: member(index + 1, **states.get(name, {})) for index, name in enumerate(names)}


def run(members: dict, previous=None, cidr=CIDR, cidr_v6=CIDR_V6, host_prefix_v6=64):
    return allocate_stack(cidr, 24, cidr_v6, host_prefix_v6, "cluster", members, previous, file_label=FILE)


def refused(members: dict, previous=None, **options) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        run(members, previous, **options)
    return caught.value


def test_each_member_gets_a_subnet_of_each_family_in_inventory_order():
    allocation, allocation_v6, content = run(group("c", "a"))
    assert allocation.subnets == {"c": "10.244.0.0/24", "a": "10.244.1.0/24"}
    assert allocation_v6.subnets == {"c": "fd44::/64", "a": "fd44:0:0:1::/64"}
    assert allocation_v6.addresses == {"c": "2001:db8::1", "a": "2001:db8::2"}
    assert list(content) == ["cidr", "host_prefix", "subnets", "released",
                             "cidr_v6", "host_prefix_v6", "subnets_v6", "released_v6"]
    assert content["subnets_v6"] == {"c": "fd44::/64", "a": "fd44:0:0:1::/64"}
    assert allocation_v6.changes == ["c: allocated fd44::/64", "a: allocated fd44:0:0:1::/64"]
    again = run(group("c", "a"), content)
    assert not again[0].changed and not again[1].changed and again[2] == content


def test_a_file_of_one_family_keeps_working_and_gains_the_ipv6_keys():
    old = {"cidr": CIDR, "host_prefix": 24, "subnets": {"a": "10.244.7.0/24"}, "released": {"gone": "10.244.0.0/24"}}
    allocation, allocation_v6, content = run(group("a", "b"), old)
    assert allocation.subnets == {"a": "10.244.7.0/24", "b": "10.244.1.0/24"}
    assert allocation_v6.subnets == {"a": "fd44::/64", "b": "fd44:0:0:1::/64"}
    # The IPv4 part is as it was, but for the new member; a host that left before IPv6 has no IPv6 subnet.
    assert content["subnets"] == {"a": "10.244.7.0/24", "b": "10.244.1.0/24"}
    assert content["released"] == {"gone": "10.244.0.0/24"} and content["released_v6"] == {}
    # Without cidr_v6 the old file reads as before, and nothing is added.
    single, none, single_content = allocate_stack(CIDR, 24, None, 64, "cluster", group("a"), old, FILE)
    assert none is None and single_content == old and not single.changed


def test_an_ipv6_part_turned_on_later_waits_for_members_outside_the_play_but_never_blocks():
    old = {"cidr": CIDR, "host_prefix": 24, "subnets": {"a": "10.244.0.0/24", "b": "10.244.1.0/24"}, "released": {}}
    _allocation, allocation_v6, _content = run(group("a", "b", b={"in_play": False, "attachments": None}), old)
    assert allocation_v6.subnets == {"a": "fd44::/64"} and allocation_v6.pending == ["b"]


def test_ipv6_pins_records_moves_and_releases_follow_the_ipv4_rules():
    first = run(group("a", "b", "c", c={"pin_v6": "fd44:0:0:9::/64"}))[2]
    assert first["subnets_v6"]["c"] == "fd44:0:0:9::/64"
    # b leaves: both its subnets are released; a rejoining b gets both back.
    _four, six, left = run(group("a", "c"), first)
    assert left["released_v6"] == {"b": "fd44:0:0:1::/64"} and left["released"] == {"b": "10.244.1.0/24"}
    assert "b: left the group, fd44:0:0:1::/64 released (not handed out again until removed from released_v6 in " \
           f"{FILE})" in six.changes
    assert run(group("a", "c", "b"), left)[1].subnets["b"] == "fd44:0:0:1::/64"
    # A lost file is rebuilt from the records of both families.
    records = {"a": {"recorded": "10.244.0.0/24", "recorded_v6": "fd44::/64"},
               "c": {"recorded": "10.244.2.0/24", "recorded_v6": "fd44:0:0:9::/64"}}
    rebuilt = run(group("a", "c", **records))[2]
    assert rebuilt["subnets_v6"] == {"a": "fd44::/64", "c": "fd44:0:0:9::/64"}
    # A new IPv6 pin of a live host is refused, naming the IPv6 pin and variable.
    error = refused(group("a", "b", "c", c={"pin_v6": "fd44:0:0:5::/64", "attachments": 2}), first)
    assert error.path == "members.c.pin_v6" and "cni_cluster_subnet_v6" in error.message


@pytest.mark.parametrize("options, path, value", [
    ({"cidr": "fd00::/48"}, "cidr", "fd00::/48"),
    ({"cidr_v6": "10.245.0.0/16"}, "cidr_v6", "10.245.0.0/16"),
    ({"cidr_v6": "fd44::1/48"}, "cidr_v6", "fd44::1/48"),
    ({"host_prefix_v6": 40}, "host_prefix_v6", 40),
    ({"host_prefix_v6": 129}, "host_prefix_v6", 129),
])
def test_bad_options_are_refused_naming_the_option_and_the_value(options, path, value):
    error = refused(group("a"), **options)
    assert (error.path, error.value) == (path, value)


@pytest.mark.parametrize("state, path, words", [
    ({"address_v6": None}, "members.a.address_v6", "cni_cluster_address_v6"),
    ({"address_v6": "192.0.2.9"}, "members.a.address_v6", "IPv4"),
    ({"pin_v6": "fd45::/64"}, "members.a.pin_v6", "outside"),
    ({"pin_v6": "fd44::/56"}, "members.a.pin_v6", "host_prefix_v6"),
    ({"recorded_v6": "not-a-cidr"}, "members.a.recorded_v6", ""),
])
def test_bad_member_input_is_refused_naming_the_ipv6_key(state, path, words):
    error = refused(group("a", a=state))
    assert error.path == path and words in error.message


def test_a_cidr_v6_too_small_for_the_group_is_refused():
    error = refused(group("a", "b", "c"), cidr_v6="fd44::/63", host_prefix_v6=64)
    assert error.path == "cidr_v6" and "3 members" in error.message


def test_two_members_with_one_ipv6_address_are_refused():
    error = refused(group("a", "b", b={"address_v6": "2001:db8::1"}))
    assert error.path == "members.b.address_v6"


def test_leaving_cidr_v6_out_of_a_file_with_ipv6_subnets_is_refused():
    content = run(group("a"))[2]
    with pytest.raises(ConfigError) as caught:
        allocate_stack(CIDR, 24, None, 64, "cluster", group("a"), content, FILE)
    assert caught.value.path == "cidr_v6" and "fd44::/48" in caught.value.message
