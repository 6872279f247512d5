# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The routed network's allocator (_allocation.allocate), a pure function: stability (a subnet
once in the file never moves, a released one is never handed out again), determinism, pins,
exhaustion, the rebuild from the hosts' records, moves, and every bad input with its message."""

from __future__ import annotations

import ipaddress
import random

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._allocation import allocate
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError

CIDR = "10.244.0.0/16"
FILE = "/inv/cni_cluster_subnets.yml"


def member(number: int, **state) -> dict:
    return {"address": f"192.0.2.{number}", "in_play": True, "recorded": None, "attachments": 0, **state}


def group(*names: str, **states) -> dict:
    """Members in the given (inventory) order, each with an address of its own."""
    return {name: member(index + 1, **states.get(name, {})) for index, name in enumerate(names)}


def run(members: dict, previous=None, cidr=CIDR, host_prefix=24):
    return allocate(cidr, host_prefix, "cluster", members, previous, file_label=FILE)


def refused(members: dict, previous=None, cidr=CIDR, host_prefix=24) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        run(members, previous, cidr, host_prefix)
    return caught.value


def file_of(subnets: dict, released: dict | None = None, cidr=CIDR, host_prefix=24) -> dict:
    return {"cidr": cidr, "host_prefix": host_prefix, "subnets": dict(subnets), "released": dict(released or {})}


# --- first allocation, determinism, stability -------------------------------------------------

def test_new_members_get_the_lowest_free_subnets_in_inventory_order():
    result = run(group("c", "a", "b"))
    assert list(result.subnets.items()) == [("c", "10.244.0.0/24"), ("a", "10.244.1.0/24"), ("b", "10.244.2.0/24")]
    assert result.content == file_of(result.subnets)
    assert result.changed and result.pending == [] and result.released == {}
    assert result.changes == ["c: allocated 10.244.0.0/24", "a: allocated 10.244.1.0/24", "b: allocated 10.244.2.0/24"]


def test_same_inventory_same_answer_and_a_rerun_changes_nothing():
    members = group(*[f"node{i}" for i in range(20)])
    first = run(members)
    assert run(members) == first
    again = run(members, first.content)
    assert again.subnets == first.subnets and again.content == first.content
    assert not again.changed and again.changes == []


def test_each_members_address_is_returned_as_checked_for_the_routes_to_its_subnet():
    """The routes go via these, not the inventory's text, which may carry a trailing space."""
    result = run(group("a", "b", "c", a={"address": " 192.0.2.1\n"}, c={"address": "192.0.2.3 ", "in_play": False}),
                 file_of({"a": "10.244.0.0/24"}))
    assert list(result.addresses.items()) == [("a", "192.0.2.1"), ("b", "192.0.2.2"), ("c", "192.0.2.3")]
    assert result.pending == ["c"]


@pytest.mark.parametrize("position", [0, 2, 5])
def test_a_member_inserted_anywhere_moves_nobody_and_gets_the_lowest_free_subnet(position):
    names = [f"node{i}" for i in range(5)]
    before = run(group(*names))
    names.insert(position, "joiner")
    after = run(group(*names), before.content)
    assert {host: after.subnets[host] for host in before.subnets} == before.subnets
    assert after.subnets["joiner"] == "10.244.5.0/24"
    assert list(after.content["subnets"])[-1] == "joiner"  # appended: one new line in the file
    assert after.changes == ["joiner: allocated 10.244.5.0/24"]


@pytest.mark.parametrize("leaver", ["node0", "node2", "node4"])
def test_a_member_removed_anywhere_moves_nobody_and_its_subnet_is_quarantined(leaver):
    names = [f"node{i}" for i in range(5)]
    before = run(group(*names))
    names.remove(leaver)
    after = run(group(*names), before.content)
    assert after.subnets == {host: subnet for host, subnet in before.subnets.items() if host != leaver}
    assert after.released == {leaver: before.subnets[leaver]}
    assert after.changes == [f"{leaver}: left the group, {before.subnets[leaver]} released (not handed out again "
                             f"until removed from released in {FILE})"]
    joined = run(group(*names, "newcomer"), after.content)
    assert joined.subnets["newcomer"] == "10.244.5.0/24"  # not the released one, though it is lower


def test_stability_under_random_joins_and_leaves():
    """Over many runs with members joining and leaving anywhere: a member's subnet never changes,
    no two members share one, and a subnet once given is never given to another host."""
    rng = random.Random(29)
    names, previous, ever = [], None, {}
    for step in range(200):
        if names and rng.random() < 0.35:
            names.remove(rng.choice(names))
        else:
            names.insert(rng.randrange(len(names) + 1), f"host{step}")
        result = run(group(*names), previous)
        assert len(set(result.subnets.values())) == len(result.subnets)
        for host, subnet in result.subnets.items():
            assert ever.setdefault(subnet, host) == host, f"{subnet} handed to {host}, was {ever[subnet]}'s"
        assert set(result.released) | set(result.subnets) == set(ever.values())
        previous = result.content


# --- pins -------------------------------------------------------------------------------------

def test_pins_are_honoured_and_reserved_before_anyone_is_allocated():
    result = run(group("a", "b", "c", b={"pin": "10.244.0.0/24"}))
    assert result.subnets == {"a": "10.244.1.0/24", "b": "10.244.0.0/24", "c": "10.244.2.0/24"}
    assert "b: pinned 10.244.0.0/24" in result.changes


def test_a_pin_of_a_member_outside_the_play_is_reserved_though_it_stays_pending():
    previous = file_of({"a": "10.244.1.0/24"})
    result = run(group("a", "b", "c", b={"pin": "10.244.0.0/24", "in_play": False}), previous)
    assert result.pending == ["b"] and "b" not in result.subnets
    assert result.subnets["c"] == "10.244.2.0/24"


@pytest.mark.parametrize("pin, message", [
    ("10.245.0.0/24", "members.b.pin: lies outside the cluster cidr 10.244.0.0/16 (got '10.245.0.0/24')"),
    ("10.244.0.0/25", "members.b.pin: is a /25, but each host's subnet is a /24 (host_prefix) (got '10.244.0.0/25')"),
    ("10.244.0.1/24", "members.b.pin: has host bits set: its network address is 10.244.0.0/24 (got '10.244.0.1/24')"),
    ("10.244.0.0", "members.b.pin: must be a CIDR: a network address and a prefix length"),
    ("fd00::/64", "members.b.pin: is IPv6, but the cluster cidr 10.244.0.0/16 is IPv4 (got 'fd00::/64')"),
    ("not-a-net/24", "members.b.pin: is not a CIDR"),
])
def test_a_pin_out_of_range_is_refused_naming_the_host_and_the_value(pin, message):
    assert str(refused(group("a", "b", b={"pin": pin}))).startswith(message)


def test_two_pins_that_overlap_are_refused_naming_both():
    error = refused(group("a", "b", a={"pin": "10.244.3.0/24"}, b={"pin": "10.244.3.0/24"}))
    assert str(error) in ("members.a.pin: is also the pin of b (got '10.244.3.0/24')",
                          "members.b.pin: is also the pin of a (got '10.244.3.0/24')")


def test_a_pin_on_another_hosts_subnet_is_refused_naming_that_host():
    error = refused(group("a", "b", b={"pin": "10.244.0.0/24"}), file_of({"a": "10.244.0.0/24"}))
    assert str(error) == f"members.b.pin: is also the subnet of a in {FILE} (got '10.244.0.0/24')"


def test_a_pin_on_a_released_subnet_is_refused_until_the_operator_removes_it():
    previous = file_of({"a": "10.244.0.0/24"}, {"gone": "10.244.1.0/24"})
    error = refused(group("a", "b", b={"pin": "10.244.1.0/24"}), previous)
    assert str(error) == (f"members.b.pin: is also the subnet gone released in {FILE} (remove it there to hand it "
                          "out again) (got '10.244.1.0/24')")
    del previous["released"]["gone"]
    assert run(group("a", "b", b={"pin": "10.244.1.0/24"}), previous).subnets["b"] == "10.244.1.0/24"


# --- exhaustion -------------------------------------------------------------------------------

def test_a_cidr_too_small_for_the_group_is_refused_with_the_count():
    error = refused(group("a", "b", "c"), cidr="10.244.0.0/23")
    assert str(error) == ("cidr: is too small for the group: it holds 2 subnets of /24, and the group has 3 members "
                          "(got '10.244.0.0/23')")


def test_exhaustion_by_released_subnets_names_the_host_and_the_way_out():
    previous = file_of({"a": "10.244.0.0/24"}, {"gone": "10.244.1.0/24"}, cidr="10.244.0.0/23")
    error = refused(group("a", "b"), previous, cidr="10.244.0.0/23")
    assert error.path == "members.b"
    assert "no free /24 is left in the cluster cidr 10.244.0.0/23: 1 taken by members, 1 released" in str(error)
    assert "remove hosts from released" in str(error)


def test_every_subnet_of_the_cidr_can_be_handed_out():
    result = run(group(*[f"n{i}" for i in range(8)]), cidr="10.244.0.0/21")
    assert sorted(result.subnets.values(), key=ipaddress.ip_network) == [f"10.244.{i}.0/24" for i in range(8)]


def test_new_members_fill_the_holes_between_pins_and_the_last_subnet_is_handed_out():
    pins = {"p1": {"pin": "10.244.1.0/24"}, "p3": {"pin": "10.244.3.0/24"}, "p2": {"pin": "10.244.2.0/24"}}
    result = run(group("a", "p1", "p3", "p2", **pins), cidr="10.244.0.0/22")
    assert result.subnets["a"] == "10.244.0.0/24"
    full = run(group("p1", "p3", "p2", "b", **pins), cidr="10.244.0.0/22")
    assert full.subnets["b"] == "10.244.0.0/24"
    previous = file_of({}, {"gone": "10.244.0.0/24"}, cidr="10.244.0.0/22")
    error = refused(group("p1", "p3", "p2", "b", **pins), previous, cidr="10.244.0.0/22")
    assert str(error).startswith("members.b: no free /24 is left in the cluster cidr 10.244.0.0/22: 3 taken by members, "
                                 "1 released")


def test_ipv6_cidr_with_a_huge_range_allocates_past_a_wide_released_range_at_once():
    members = {"a": {"address": "fd00::1"}, "b": {"address": "fd00::2"}}
    previous = {"cidr": "fd00:10::/32", "host_prefix": 64, "subnets": {"a": "fd00:10::/64"},
                "released": {"gone": "fd00:10::/40"}}
    with pytest.raises(ConfigError, match="subnets.a in .*: overlaps fd00:10::/40, the subnet gone released"):
        run(members, previous, cidr="fd00:10::/32", host_prefix=64)
    previous["subnets"]["a"] = "fd00:10:ff00::/64"
    result = run(members, previous, cidr="fd00:10::/32", host_prefix=64)
    assert result.subnets == {"a": "fd00:10:ff00::/64", "b": "fd00:10:100::/64"}


# --- rebuild from the hosts' records ------------------------------------------------------------

def test_a_lost_file_is_rebuilt_from_the_records_and_the_rest_allocated_around_them():
    members = group("a", "b", "c", a={"recorded": "10.244.2.0/24"}, b={"recorded": "10.244.0.0/24"})
    result = run(members)
    assert result.subnets == {"a": "10.244.2.0/24", "b": "10.244.0.0/24", "c": "10.244.1.0/24"}
    assert result.changes[:2] == [f"a: 10.244.2.0/24 restored from its own record (no entry in {FILE})",
                                  f"b: 10.244.0.0/24 restored from its own record (no entry in {FILE})"]


def test_a_partial_file_gets_the_missing_hosts_back_from_their_records():
    previous = file_of({"a": "10.244.0.0/24"})
    result = run(group("a", "b", b={"recorded": "10.244.7.0/24"}), previous)
    assert result.content["subnets"] == {"a": "10.244.0.0/24", "b": "10.244.7.0/24"}


def test_a_record_that_disagrees_with_the_file_fails_naming_both():
    error = refused(group("a", a={"recorded": "10.244.9.0/24"}), file_of({"a": "10.244.0.0/24"}))
    assert error.path == "members.a.recorded"
    assert f"a records 10.244.9.0/24 as its subnet, but subnets.a in {FILE} says 10.244.0.0/24" in str(error)


def test_two_records_of_one_subnet_fail_naming_both_hosts():
    error = refused(group("a", "b", a={"recorded": "10.244.1.0/24"}, b={"recorded": "10.244.1.0/24"}))
    assert str(error) in ("members.a.recorded: is also the subnet b records (got '10.244.1.0/24')",
                          "members.b.recorded: is also the subnet a records (got '10.244.1.0/24')")


def test_a_record_of_another_hosts_subnet_fails_naming_that_host():
    error = refused(group("a", "b", b={"recorded": "10.244.0.0/24"}), file_of({"a": "10.244.0.0/24"}))
    assert str(error) == f"members.b.recorded: is also the subnet of a in {FILE} (got '10.244.0.0/24')"


def test_without_a_file_no_subnet_is_handed_out_while_a_member_outside_the_play_may_record_one():
    members = group("a", "b", b={"in_play": False})
    error = refused(members)
    assert error.path == "members.a"
    assert f"{FILE} does not exist, and b (in the group, not in this play) may hold one" in str(error)
    restored = run(group("a", "b", a={"recorded": "10.244.4.0/24"}, b={"in_play": False}))
    assert restored.subnets == {"a": "10.244.4.0/24"} and restored.pending == ["b"]


def test_with_a_file_a_member_outside_the_play_without_an_entry_is_pending_and_others_still_join():
    previous = file_of({"a": "10.244.0.0/24"})
    result = run(group("a", "b", "c", b={"in_play": False, "attachments": None}), previous)
    assert result.pending == ["b"]
    assert result.subnets == {"a": "10.244.0.0/24", "c": "10.244.1.0/24"}
    assert "b" not in result.content["subnets"]


def test_a_member_outside_the_play_keeps_its_entry():
    previous = file_of({"a": "10.244.0.0/24", "b": "10.244.1.0/24"})
    result = run(group("a", "b", b={"in_play": False, "attachments": None}), previous)
    assert result.subnets == previous["subnets"] and result.pending == [] and not result.changed


# --- released hosts ----------------------------------------------------------------------------

def test_a_released_host_that_rejoins_gets_its_subnet_back():
    previous = file_of({"a": "10.244.0.0/24"}, {"b": "10.244.1.0/24", "gone": "10.244.2.0/24"})
    result = run(group("a", "c", "b"), previous)
    assert result.subnets == {"a": "10.244.0.0/24", "c": "10.244.3.0/24", "b": "10.244.1.0/24"}
    assert result.released == {"gone": "10.244.2.0/24"}
    assert "b: rejoined the group, 10.244.1.0/24 back from released" in result.changes


def test_a_rejoining_host_whose_record_disagrees_with_its_released_entry_fails():
    previous = file_of({}, {"b": "10.244.1.0/24"})
    error = refused(group("b", b={"recorded": "10.244.5.0/24"}), previous)
    assert f"but released.b in {FILE} says 10.244.1.0/24" in str(error)


# --- moves: a pin or cidr change -------------------------------------------------------------

def test_a_new_pin_moves_a_host_without_attachments():
    result = run(group("a", a={"pin": "10.244.7.0/24", "recorded": "10.244.0.0/24"}), file_of({"a": "10.244.0.0/24"}))
    assert result.subnets == {"a": "10.244.7.0/24"}
    assert result.changes == ["a: moved from 10.244.0.0/24 to 10.244.7.0/24 (its pin; it has no attachments)"]


def test_a_new_pin_is_refused_while_the_host_has_attachments_naming_the_way_out():
    error = refused(group("a", a={"pin": "10.244.7.0/24", "attachments": 2}), file_of({"a": "10.244.0.0/24"}))
    assert str(error) == (
        "members.a.pin: a's subnet would move from 10.244.0.0/24 to its pin 10.244.7.0/24 (cni_cluster_subnet), but "
        "it has 2 attachment(s) of the network 'cluster', which would lose their gateway: detach them first "
        "(cnikit.cni.cni_attach state=absent) and run again, or set its cni_cluster_subnet back to 10.244.0.0/24 "
        "(got '10.244.7.0/24')")


def test_a_new_pin_is_refused_when_the_attachments_are_unknown():
    error = refused(group("a", a={"pin": "10.244.7.0/24", "in_play": False, "attachments": None}),
                    file_of({"a": "10.244.0.0/24"}))
    assert "its attachments are unknown (a is not in this play): run the play with a in it" in str(error)


def test_a_new_pin_is_refused_when_the_attachments_of_a_host_in_the_play_are_not_given():
    error = refused(group("a", a={"pin": "10.244.7.0/24", "attachments": None}), file_of({"a": "10.244.0.0/24"}))
    assert "but its attachments of the network 'cluster' are unknown: detach its workloads and give its attachments " \
           "as 0, or set its cni_cluster_subnet back to 10.244.0.0/24" in str(error)


def test_a_pin_differing_from_the_record_alone_is_a_move_too():
    error = refused(group("a", a={"pin": "10.244.7.0/24", "recorded": "10.244.0.0/24", "attachments": 1}))
    assert error.path == "members.a.pin" and "would move from 10.244.0.0/24" in str(error)


def test_a_new_cidr_is_refused_while_a_host_outside_it_has_attachments():
    previous = file_of({"a": "10.244.0.0/24", "b": "10.244.1.0/24"})
    members = group("a", "b", a={"attachments": 0}, b={"attachments": 3})
    error = refused(members, previous, cidr="10.245.0.0/16")
    assert str(error) == (
        "cidr: b's subnet 10.244.1.0/24 is not a /24 of the cluster cidr 10.245.0.0/16, so it would move, but it has 3 "
        "attachment(s) of the network 'cluster', which would lose their gateway: detach them first "
        "(cnikit.cni.cni_attach state=absent) and run again, or set cni_cluster_cidr and cni_cluster_host_prefix back "
        "to what holds it (got '10.245.0.0/16')")


def test_a_new_cidr_moves_hosts_without_attachments():
    previous = file_of({"a": "10.244.0.0/24", "b": "10.244.1.0/24"}, {"gone": "10.244.2.0/24"})
    result = run(group("a", "b"), previous, cidr="10.245.0.0/16")
    assert result.subnets == {"a": "10.245.0.0/24", "b": "10.245.1.0/24"}
    assert result.released == {"gone": "10.244.2.0/24"}
    assert result.changes[0] == "cidr: 10.244.0.0/16 -> 10.245.0.0/16"
    assert "a: moved from 10.244.0.0/24 to 10.245.0.0/24 (cidr 10.245.0.0/16, host_prefix 24; it has no attachments)" \
        in result.changes


def test_a_wider_cidr_that_still_holds_every_subnet_moves_nobody():
    previous = file_of({"a": "10.244.0.0/24"})
    result = run(group("a", a={"attachments": 5}), previous, cidr="10.244.0.0/15")
    assert result.subnets == {"a": "10.244.0.0/24"} and result.changes == ["cidr: 10.244.0.0/16 -> 10.244.0.0/15"]


def test_a_new_host_prefix_is_a_move_of_every_host():
    previous = file_of({"a": "10.244.0.0/24"})
    error = refused(group("a", a={"attachments": None}), previous, host_prefix=25)
    assert "a's subnet 10.244.0.0/24 is not a /25 of the cluster cidr" in str(error)
    assert run(group("a"), previous, host_prefix=25).subnets == {"a": "10.244.0.0/25"}


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("members, message", [
    ({"a": {}}, "members.a.address: is required: the address the other members route a's subnet through"),
    ({"a": {"address": ""}}, "members.a.address: is required"),
    ({"a": {"address": "node-a.example"}}, "members.a.address: is not an IP address: routes to a's subnet go via an "
                                           "address, not a host name (got 'node-a.example')"),
    ({"a": {"address": "fd00::1"}}, "members.a.address: is an IPv6 address, but the cluster cidr 10.244.0.0/16 is "
                                    "IPv4 (got 'fd00::1')"),
    ({"a": {"address": "192.0.2.1"}, "b": {"address": "192.0.2.1"}},
     "members.b.address: is also a's address: each member needs an address of its own (got '192.0.2.1')"),
    ({"a": {"address": "192.0.2.1", "pinned": "10.244.0.0/24"}},
     "members.a: unknown key pinned (known: address, pin, in_play, recorded, attachments, address_v6, pin_v6, "
     "recorded_v6)"),
    ({"a": "192.0.2.1"}, "members.a: must be a mapping"),
    ({"a": {"address": "192.0.2.1", "in_play": "maybe"}}, "members.a.in_play: must be true or false (got 'maybe')"),
    ({"a": {"address": "192.0.2.1", "attachments": -1}}, "members.a.attachments: must be a number of attachments"),
    ({"a": {"address": "192.0.2.1", "recorded": "10.244.0.1/24"}},
     "members.a.recorded: has host bits set: its network address is 10.244.0.0/24"),
    (["a"], "members: must be a mapping of host name to its address and state"),
])
def test_bad_members_are_refused_naming_the_host_and_the_value(members, message):
    assert str(refused(members)).startswith(message)


@pytest.mark.parametrize("cidr, host_prefix, message", [
    ("10.244.0.0/16", 8, "host_prefix: must lie between the cidr's prefix length 16 and 32: each host's subnet is a "
                         "part of 10.244.0.0/16 (got 8)"),
    ("10.244.0.0/16", 33, "host_prefix: must lie between the cidr's prefix length 16 and 32"),
    ("10.244.1.0/16", 24, "cidr: has host bits set: its network address is 10.244.0.0/16 (got '10.244.1.0/16')"),
    ("10.244.0.0", 24, "cidr: must be a CIDR: a network address and a prefix length"),
])
def test_a_bad_cidr_or_host_prefix_is_refused(cidr, host_prefix, message):
    assert str(refused(group("a"), cidr=cidr, host_prefix=host_prefix)).startswith(message)


def test_string_spellings_of_in_play_and_attachments_are_taken_as_ansible_templates_give_them():
    previous = file_of({"a": "10.244.0.0/24"})
    result = run(group("a", a={"in_play": "True", "attachments": "0", "pin": "10.244.3.0/24"}), previous)
    assert result.subnets == {"a": "10.244.3.0/24"}


@pytest.mark.parametrize("previous, message", [
    (["a"], f"{FILE}: must be a mapping with the keys cidr, host_prefix, subnets, released"),
    ({"subnet": {"a": "10.244.0.0/24"}},
     f"{FILE}: unknown key subnet (known: cidr, host_prefix, subnets, released, cidr_v6, host_prefix_v6, subnets_v6, "
     "released_v6)"),
    ({"subnets": ["a"]}, f"subnets in {FILE}: must be a mapping of host name to subnet"),
    ({"subnets": {"a": "10.244.0.300/24"}}, f"subnets.a in {FILE}: is not a CIDR"),
    ({"subnets": {"a": 42}}, f"subnets.a in {FILE}: must be a CIDR"),
    ({"subnets": {"a": "10.244.0.1/24"}}, f"subnets.a in {FILE}: has host bits set"),
    ({"subnets": {7: "10.244.0.0/24"}}, f"subnets in {FILE}: each key must be a host name (got 7)"),
    ({"released": {"a": "nope"}}, f"released.a in {FILE}: must be a CIDR"),
    ({"cidr": "10.244.0.0"}, f"cidr in {FILE}: must be a CIDR"),
    ({"host_prefix": "24"}, f"host_prefix in {FILE}: must be an integer prefix length (got '24')"),
    ({"subnets": {"a": "10.244.0.0/24", "b": "10.244.0.0/24"}},
     f"subnets.b in {FILE}: is also the subnet of a in {FILE} (got '10.244.0.0/24')"),
    ({"subnets": {"a": "10.244.0.0/24"}, "released": {"b": "10.244.0.0/23"}}, f"in {FILE}: overlaps"),
    ({"subnets": {"a": "10.244.0.0/24"}, "released": {"a": "10.244.1.0/24"}},
     f"released.a in {FILE}: a is also in subnets: a host is either a member or released (got '10.244.1.0/24')"),
])
def test_a_hand_broken_file_is_refused_naming_the_key_and_the_value(previous, message):
    assert message in str(refused(group("a", "b"), previous))


def test_bad_input_is_refused_before_anything_is_decided():
    """A broken member is reported even when the file would also fail: input first, then the file."""
    error = refused({"a": {"address": "x"}}, ["not a mapping"])
    assert error.path == "members.a.address"
