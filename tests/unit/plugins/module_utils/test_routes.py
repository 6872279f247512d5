# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The route reconciler without the kernel: options parsed and checked, the plan made from
desired and current routes, and the batch undone when the kernel refuses part of it (a
recording stand-in for the rtnetlink socket, which is failure injection only; the real kernel
is tests/functional/test_routes_real.py's)."""

from __future__ import annotations

import errno
import ipaddress

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _routes
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError, OperationError
from ansible_collections.cnikit.cni.plugins.module_utils._routes import Route, RouteError, make_plan, parse_options
from ansible_collections.cnikit.cni.plugins.module_utils._rtnetlink import KernelRoute, NetlinkError, RouteAnswer

OWN = 210
CLUSTER = [ipaddress.ip_network("10.244.0.0/16")]


def params(**overrides) -> dict:
    return {"routes": [], "within": ["10.244.0.0/16"], "protocol": OWN, "table": 254, "state": "present",
            **overrides}


def route(dst: str, via: str | None = None, protocol: int | None = OWN, **fields) -> Route:
    return Route(dst=ipaddress.ip_network(dst), via=ipaddress.ip_address(via) if via else None, protocol=protocol,
                 **fields)


def desired(dst: str, via: str | None = None, **fields) -> Route:
    return route(dst, via, protocol=None, **fields)


# -- the plan --------------------------------------------------------------------------------------

def test_a_missing_route_is_added():
    plan = make_plan([desired("10.244.1.0/24", "10.199.0.12", name="fleet-2")], CLUSTER, [], OWN)
    assert plan.add == [desired("10.244.1.0/24", "10.199.0.12")]
    assert plan.add[0].name == "fleet-2"
    assert (plan.replace, plan.remove, plan.conflicts, plan.changed) == ([], [], [], True)


def test_an_own_route_as_desired_is_left_alone():
    current = [route("10.244.1.0/24", "10.199.0.12", dev="eth0")]
    plan = make_plan([desired("10.244.1.0/24", "10.199.0.12")], CLUSTER, current, OWN)
    assert not plan.changed
    assert plan.after() == current


def test_a_changed_via_replaces_the_route():
    old = route("10.244.1.0/24", "10.199.0.12", dev="eth0")
    new = desired("10.244.1.0/24", "10.199.0.22", name="fleet-2")
    plan = make_plan([new], CLUSTER, [old], OWN)
    assert plan.replace == [(old, new)]
    assert (plan.add, plan.remove) == ([], [])


@pytest.mark.parametrize("change", [{"dev": "eth1"}, {"type": "blackhole", "via": None}])
def test_a_changed_dev_or_type_replaces_the_route(change):
    old = route("10.244.1.0/24", "10.199.0.12", dev="eth0")
    fields = {"via": "10.199.0.12", "dev": "eth0", **change}
    new = desired("10.244.1.0/24", **fields)
    assert make_plan([new], CLUSTER, [old], OWN).replace == [(old, new)]


def test_a_desired_route_without_dev_takes_the_kernels_dev():
    plan = make_plan([desired("10.244.1.0/24", "10.199.0.12")], CLUSTER,
                     [route("10.244.1.0/24", "10.199.0.12", dev="eth0")], OWN)
    assert not plan.changed


def test_the_same_dst_with_another_metric_is_another_route():
    old = route("10.244.1.0/24", "10.199.0.12", metric=100)
    plan = make_plan([desired("10.244.1.0/24", "10.199.0.12")], CLUSTER, [old], OWN)
    assert plan.add == [desired("10.244.1.0/24", "10.199.0.12")]
    assert plan.remove == [old]


def test_an_own_route_no_longer_listed_is_removed():
    stale = route("10.244.5.0/24", "10.199.0.16")
    kept = route("10.244.1.0/24", "10.199.0.12")
    plan = make_plan([desired("10.244.1.0/24", "10.199.0.12")], CLUSTER, [kept, stale], OWN)
    assert plan.remove == [stale]
    assert plan.after() == [kept]


def test_a_foreign_route_inside_within_is_reported_and_kept():
    foreign = route("10.244.9.0/24", "10.199.0.99", protocol=4)
    plan = make_plan([desired("10.244.1.0/24", "10.199.0.12")], CLUSTER, [foreign], OWN)
    assert plan.conflicts == [foreign]
    assert foreign not in plan.remove


def test_connected_routes_are_not_reported():
    bridge = route("10.244.0.0/24", protocol=_routes.RTPROT_KERNEL, dev="cni-cluster0")
    plan = make_plan([], CLUSTER, [bridge], OWN)
    assert (plan.conflicts, plan.remove, plan.changed) == ([], [], False)


def test_routes_outside_within_are_never_touched_even_own_ones():
    outside_own = route("10.99.0.0/24", "10.199.0.12")
    outside_foreign = route("0.0.0.0/0", "10.199.0.1", protocol=4)
    supernet_own = route("10.0.0.0/8", "10.199.0.12")
    plan = make_plan([], CLUSTER, [outside_own, outside_foreign, supernet_own], OWN)
    assert (plan.remove, plan.conflicts, plan.changed) == ([], [], False)


def test_within_is_per_family():
    own6 = route("fd00:244:1::/64", "fd00::12", metric=1024)
    plan = make_plan([], CLUSTER, [own6], OWN)
    assert plan.remove == []
    plan = make_plan([], CLUSTER + [ipaddress.ip_network("fd00:244::/32")], [own6], OWN)
    assert plan.remove == [own6]


def test_a_foreign_route_with_the_same_dst_and_metric_is_an_error_naming_both():
    foreign = route("10.244.1.0/24", "10.199.0.99", protocol=4)
    with pytest.raises(RouteError) as caught:
        make_plan([desired("10.244.1.0/24", "10.199.0.12", name="fleet-2")], CLUSTER, [foreign], OWN)
    message = str(caught.value)
    assert "fleet-2 (10.244.1.0/24)" in message and "protocol 4 (static)" in message and "metric 0" in message
    assert caught.value.routes == [{"dst": "10.244.1.0/24", "via": "10.199.0.99", "dev": None, "type": "unicast",
                                    "metric": 0, "table": 254, "protocol": 4, "name": "fleet-2"}]


def test_a_connected_route_with_the_same_dst_and_metric_is_an_error_too():
    bridge = route("10.244.0.0/24", protocol=_routes.RTPROT_KERNEL, dev="cni-cluster0")
    with pytest.raises(RouteError, match=r"protocol 2 \(kernel\)"):
        make_plan([desired("10.244.0.0/24", type="unreachable")], CLUSTER, [bridge], OWN)


def test_a_foreign_route_at_another_metric_is_only_a_conflict():
    foreign = route("10.244.1.0/24", "10.199.0.99", protocol=4, metric=50)
    plan = make_plan([desired("10.244.1.0/24", "10.199.0.12")], CLUSTER, [foreign], OWN)
    assert plan.conflicts == [foreign] and len(plan.add) == 1


def test_state_absent_removes_only_its_own_inside_within():
    own = route("10.244.1.0/24", "10.199.0.12")
    foreign = route("10.244.9.0/24", "10.199.0.99", protocol=4)
    outside = route("10.99.0.0/24", "10.199.0.12")
    plan = make_plan([], CLUSTER, [own, foreign, outside], OWN)
    assert plan.remove == [own] and plan.conflicts == [foreign] and plan.after() == []


# -- options ---------------------------------------------------------------------------------------

def test_options_parsed_with_the_kernels_default_metrics():
    options = parse_options(params(routes=[
        {"dst": "10.244.1.0/24", "via": "10.199.0.12", "name": "fleet-2"},
        {"dst": "10.244.0.0/24", "type": "unreachable", "metric": 4000},
        {"dst": "fd00:244:1::/64", "via": "fd00::12"},
    ], within=["10.244.0.0/16", "fd00:244::/32"]))
    assert [(str(r.dst), r.metric, r.type) for r in options.routes] == [
        ("10.244.1.0/24", 0, "unicast"), ("10.244.0.0/24", 4000, "unreachable"), ("fd00:244:1::/64", 1024, "unicast")]
    assert options.routes[0].name == "fleet-2"


def test_within_defaults_to_the_routes_own_prefixes():
    options = parse_options(params(routes=[{"dst": "192.168.50.0/24", "via": "10.0.0.254"}], within=[]))
    assert options.within == [ipaddress.ip_network("192.168.50.0/24")]


def test_state_absent_ignores_routes():
    options = parse_options(params(state="absent", routes=[{"dst": "bogus"}]))
    assert options.routes == []


BAD = [
    ({"routes": [{"dst": "10.244.1.0", "via": "10.199.0.12"}]}, "routes[0].dst", "10.244.1.0", "must be a CIDR"),
    ({"routes": [{"dst": "10.244.1.0/33", "via": "10.199.0.12"}]}, "routes[0].dst", "10.244.1.0/33", "is not a CIDR"),
    ({"routes": [{"dst": "peer-2/24", "via": "10.199.0.12"}]}, "routes[0].dst", "peer-2/24", "is not a CIDR"),
    ({"routes": [{"dst": "10.244.1.7/24", "via": "10.199.0.12"}]}, "routes[0].dst", "10.244.1.7/24",
     "host bits set: its network address is 10.244.1.0/24"),
    ({"routes": [{"dst": "10.244.1.0/24", "via": "10.199.0.300"}]}, "routes[0].via", "10.199.0.300",
     "not an IP address"),
    ({"routes": [{"dst": "10.244.1.0/24", "via": "fleet-2"}]}, "routes[0].via", "fleet-2", "not an IP address"),
    ({"routes": [{"dst": "10.244.1.0/24", "via": "fd00::12"}]}, "routes[0].via", "fd00::12",
     "IPv6 address for the IPv4 destination"),
    ({"routes": [{"dst": "10.244.1.0/24", "via": "10.199.0.12"}, {"dst": "10.99.0.0/24", "via": "10.199.0.12"}]},
     "routes[1].dst", "10.99.0.0/24", "not inside any prefix of within (10.244.0.0/16)"),
    ({"routes": [{"dst": "10.0.0.0/8", "via": "10.199.0.12"}]}, "routes[0].dst", "10.0.0.0/8", "not inside"),
    ({"routes": [{"dst": "10.244.1.0/24"}]}, "routes[0]", "10.244.1.0/24", "needs via"),
    ({"routes": [{"dst": "10.244.1.0/24", "type": "blackhole", "via": "10.199.0.12"}]}, "routes[0].via",
     "10.199.0.12", "takes no via or dev"),
    ({"routes": [{"dst": "10.244.1.0/24", "via": "10.199.0.12", "dev": "eth0/x"}]}, "routes[0].dev", "eth0/x",
     "interface name"),
    ({"routes": [{"dst": "10.244.1.0/24", "via": "10.199.0.12", "metric": -1}]}, "routes[0].metric", -1, "between"),
    ({"routes": [{"dst": "10.244.1.0/24", "via": "10.199.0.12"}, {"dst": "10.244.1.0/24", "via": "10.199.0.13"}]},
     "routes[1]", "10.244.1.0/24", "has the dst and metric of routes[0]"),
    ({"within": ["10.244.0.0"]}, "within[0]", "10.244.0.0", "must be a CIDR"),
    ({"within": ["10.244.0.1/16"]}, "within[0]", "10.244.0.1/16", "host bits set"),
    ({"within": []}, "within", [], "is required with state=absent or an empty routes list"),
    ({"within": [], "state": "absent", "routes": [{"dst": "10.244.1.0/24", "via": "10.199.0.12"}]}, "within", [],
     "is required"),
    ({"protocol": 4}, "protocol", 4, "static"),
    ({"protocol": 256}, "protocol", 256, "between 5 and 255"),
    ({"table": 255}, "table", 255, "local table"),
    ({"table": 0}, "table", 0, "between 1"),
]


@pytest.mark.parametrize("overrides, path, value, words", BAD, ids=[f"{case[1]}={case[2]!r}" for case in BAD])
def test_bad_input_names_the_field_and_the_value(overrides, path, value, words):
    with pytest.raises(ConfigError) as caught:
        parse_options(params(**overrides))
    assert (caught.value.path, caught.value.value) == (path, value)
    assert words in caught.value.message
    assert str(caught.value).startswith(f"{path}: ") and repr(value) in str(caught.value)


# -- the batch and its undo ------------------------------------------------------------------------

class RefusingNetlink:
    """Records the batches it is handed; refuses, in its n-th batch, the requests whose
    destination is in the n-th set of ``refusals`` (none past the last)."""

    def __init__(self, *refusals: set):
        self.refusals = list(refusals)
        self.batches = []

    def change(self, operations: list) -> list:
        refuse = self.refusals[len(self.batches)] if len(self.batches) < len(self.refusals) else set()
        self.batches.append([(verb, str(request.dst), request.protocol) for verb, request in operations])
        return [NetlinkError(errno.ENETUNREACH, "Nexthop has invalid gateway") if str(request.dst) in refuse
                else None for _verb, request in operations]


def plan_of_each_kind():
    old = route("10.244.1.0/24", "10.199.0.12")
    return make_plan([desired("10.244.1.0/24", "10.199.0.22"), desired("10.244.2.0/24", "10.199.0.13"),
                      desired("10.244.3.0/24", "10.199.0.14")],
                     CLUSTER, [old, route("10.244.5.0/24", "10.199.0.16")], OWN)


def test_the_plan_goes_to_the_kernel_in_one_batch_marked_as_own():
    netlink = RefusingNetlink()
    _routes.apply(netlink, plan_of_each_kind(), OWN)
    assert netlink.batches == [[("add", "10.244.2.0/24", OWN), ("add", "10.244.3.0/24", OWN),
                                ("replace", "10.244.1.0/24", OWN), ("delete", "10.244.5.0/24", OWN)]]


def test_a_refused_route_undoes_what_the_batch_changed_in_reverse_order():
    netlink = RefusingNetlink({"10.244.3.0/24"})
    with pytest.raises(OperationError) as caught:
        _routes.apply(netlink, plan_of_each_kind(), OWN)
    assert netlink.batches[1] == [("add", "10.244.5.0/24", OWN), ("replace", "10.244.1.0/24", OWN),
                                  ("delete", "10.244.2.0/24", OWN)]
    assert "add route 10.244.3.0/24: Network is unreachable (Nexthop has invalid gateway)" in str(caught.value)
    assert "put back" in str(caught.value) and not caught.value.cleanup_errors
    assert caught.value.to_dict()["routes"][0]["action"] == "add"


def test_an_undo_the_kernel_refuses_is_reported_beside_the_cause():
    netlink = RefusingNetlink({"10.244.3.0/24"}, {"10.244.2.0/24"})
    plan = make_plan([desired("10.244.2.0/24", "10.199.0.13"), desired("10.244.3.0/24", "10.199.0.14")],
                     CLUSTER, [], OWN)
    with pytest.raises(OperationError) as caught:
        _routes.apply(netlink, plan, OWN)
    assert [str(error) for error in caught.value.cleanup_errors] == [
        "undo delete of route 10.244.2.0/24: Network is unreachable (Nexthop has invalid gateway)"]
    assert caught.value.to_dict()["rollback_errors"][0]["routes"][0]["dst"] == "10.244.2.0/24"


def test_an_undo_puts_a_route_back_on_the_interface_index_read_from_the_table(monkeypatch):
    """Not looked up by name again: an interface gone since the table was read is the kernel's
    refusal (ENODEV), reported beside the cause like any other."""
    monkeypatch.setattr(_routes.socket, "if_nametoindex", lambda name: pytest.fail(f"looked up {name}"))
    netlink = RefusingNetlink({"10.244.3.0/24"}, {"10.244.5.0/24"})
    gone = route("10.244.5.0/24", "10.199.0.16", dev="cnit-gone0", oif=42)
    plan = make_plan([desired("10.244.3.0/24", "10.199.0.14"), desired("10.244.4.0/24", "10.199.0.15")],
                     CLUSTER, [gone], OWN)
    sent = []
    change = netlink.change
    monkeypatch.setattr(netlink, "change", lambda operations: sent.append(operations) or change(operations))
    with pytest.raises(OperationError) as caught:
        _routes.apply(netlink, plan, OWN)
    assert [(verb, str(request.dst), request.oif) for verb, request in sent[1]] == [
        ("add", "10.244.5.0/24", 42), ("delete", "10.244.4.0/24", 0)]
    assert [error.routes[0]["dst"] for error in caught.value.cleanup_errors] == ["10.244.5.0/24"]


def test_each_dev_is_looked_up_once_and_its_index_goes_to_the_kernel(monkeypatch):
    looked_up = []
    monkeypatch.setattr(_routes.socket, "if_nametoindex", lambda name: looked_up.append(name) or 7)
    monkeypatch.setattr(_routes.socket, "if_indextoname", lambda index: f"eth{index}")

    class Kernel(RefusingNetlink):
        asked = []

        def get(self, addresses, oifs):
            self.asked.append(list(oifs))
            return [RouteAnswer(type=1, gateway=None, oif=oif or 8) for oif in oifs]

    netlink = Kernel()
    options = parse_options(params(routes=[{"dst": "10.244.1.0/24", "via": "10.199.0.12", "dev": "eth7"},
                                           {"dst": "10.244.2.0/24", "dev": "eth7"},
                                           {"dst": "10.244.3.0/24", "via": "10.199.0.13"}]))
    resolved = _routes.resolve_gateways(netlink, options.routes)
    sent = []
    change = netlink.change
    monkeypatch.setattr(netlink, "change", lambda operations: sent.append(operations) or change(operations))
    _routes.apply(netlink, make_plan(resolved, CLUSTER, [], OWN), OWN)

    assert looked_up == ["eth7", "eth7"]  # once for each route that names it
    assert netlink.asked == [[7, 0]]
    assert [route.dev for route in resolved] == ["eth7", "eth7", "eth8"]
    assert [request.oif for _verb, request in sent[0]] == [7, 7, 8]


@pytest.mark.parametrize("kind, number", [("throw", 9), ("multicast", 5), ("anycast", 4), ("nat", 10)])
def test_an_own_route_of_a_type_it_cannot_ask_for_is_removed_and_put_back_by_its_number(kind, number):
    """A route of this protocol that someone else added as ``ip route add throw ... proto 210``
    is still this module's to remove, and to put back when the batch is undone."""

    class Table(RefusingNetlink):
        types = []  # (verb, rtm_type) of every request, across batches

        def dump(self, family, table):
            return [KernelRoute(dst=ipaddress.ip_network("10.244.7.0/24"), type=number, protocol=OWN, table=table,
                                metric=0)]

        def change(self, operations: list) -> list:
            self.types += [(verb, request.type) for verb, request in operations]
            return super().change(operations)

    netlink = Table({"10.244.3.0/24"})
    current = _routes.read_routes(netlink, 254, {4})
    assert [found.type for found in current] == [kind]
    plan = make_plan([desired("10.244.3.0/24", "10.199.0.14")], CLUSTER, current, OWN)

    with pytest.raises(OperationError):
        _routes.apply(netlink, plan, OWN)

    assert netlink.types == [("add", 1), ("delete", number), ("add", number)]


# -- the result ------------------------------------------------------------------------------------

def test_route_lines_read_as_ip_route_shows_them():
    assert route("10.244.1.0/24", "10.199.0.12", dev="eth0").line(OWN) == \
        "10.244.1.0/24 via 10.199.0.12 dev eth0 proto 210 metric 0"
    assert route("10.244.0.0/24", type="unreachable", metric=4000, table=100).line(OWN) == \
        "unreachable 10.244.0.0/24 proto 210 metric 4000 table 100"


# -- onlink ------------------------------------------------------------------------------------------

def test_an_onlink_route_is_another_route_than_the_same_without_onlink():
    plan = make_plan([desired("10.244.2.0/24", "10.244.2.0", dev="vx0", onlink=True)], CLUSTER,
                     [route("10.244.2.0/24", "10.244.2.0", dev="vx0")], OWN)
    assert [new.onlink for _old, new in plan.replace] == [True]
    assert route("10.244.2.0/24", "10.244.2.0", dev="vx0", onlink=True).line(OWN) == \
        "10.244.2.0/24 via 10.244.2.0 dev vx0 onlink proto 210 metric 0"


@pytest.mark.parametrize("item", [{"dst": "10.244.2.0/24", "via": "10.244.2.0", "onlink": True},
                                  {"dst": "10.244.2.0/24", "dev": "vx0", "onlink": True}])
def test_an_onlink_route_needs_via_and_dev(item):
    with pytest.raises(ConfigError) as raised:
        parse_options(params(routes=[item]))
    assert raised.value.path == "routes[0].onlink"


def test_an_onlink_gateway_is_not_asked_of_the_kernel_and_its_dev_may_be_planned_in_check_mode(monkeypatch):
    def no_such_interface(name):
        raise OSError(19, "No such device")

    monkeypatch.setattr(_routes.socket, "if_nametoindex", no_such_interface)

    class Kernel(RefusingNetlink):
        def get(self, addresses, oifs):
            assert addresses == []
            return []

    options = parse_options(params(routes=[{"dst": "10.244.2.0/24", "via": "10.244.2.0", "dev": "vx0",
                                            "onlink": True}]))
    assert [route.oif for route in _routes.resolve_gateways(Kernel(), options.routes, planned_devs=True)] == [0]
    with pytest.raises(ConfigError, match="no interface of this name"):
        _routes.resolve_gateways(Kernel(), options.routes)
