# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_route's service against the real kernel, inside a network namespace each test makes
(``cnit-rt-<n>``, removed even when the test fails): a veth pair whose end ``cnit-rt0`` holds
10.201.0.1/24 and fd01::1/64, so that gateways in those subnets are on-link. The service runs in
a child process started with ``ip netns exec``, so no route of the machine's own namespace is
ever touched."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PREFIX = "cnit-rt-"
UTILS = Path(__file__).resolve().parents[1] / "utils"
_counter = itertools.count(1)
CLUSTER = "10.244.0.0/16"
PEERS = [
    {"dst": "10.244.1.0/24", "via": "10.201.0.12", "name": "fleet-2"},
    {"dst": "10.244.2.0/24", "via": "10.201.0.13", "name": "fleet-3"},
    {"dst": "10.244.0.0/24", "type": "unreachable", "metric": 4000, "name": "fleet-1"},
]

RUNNER = """
import dataclasses, ipaddress, json, sys
sys.path.insert(0, sys.argv[2])
from stand_in_host import StandInHost, TaskFailed
from ansible_collections.cnikit.cni.plugins.module_utils import _route_task, _routes
from ansible_collections.cnikit.cni.plugins.module_utils._errors import CNIError

args = json.loads(sys.argv[1])
refuse = args.pop("refuse", None)
if refuse:
    # Failure injection: the request for this destination carries a gateway that is on no link,
    # which the real kernel refuses, after the pre-checks have passed.
    real_request = _routes._request

    def _request(verb, route, protocol):
        request = real_request(verb, route, protocol)
        if str(route.dst) == refuse:
            request = dataclasses.replace(request, gateway=ipaddress.ip_address("10.202.0.1"), oif=0)
        return request
    _routes._request = _request
host = StandInHost("/tmp", check_mode=args.pop("check"), diff=True)
params = {"routes": [], "within": [], "protocol": 210, "table": 254, "state": "present", **args}
result, error = {}, None
try:
    _route_task.run(host, params, result)
except CNIError as exc:
    error = exc.to_dict()
print(json.dumps({"result": result, "warnings": host.warnings, "error": error}))
"""


@pytest.fixture(autouse=True)
def host_guard():
    """This module's tests make only their own ``cnit-rt-`` namespaces (removed by ``netns``),
    not the ``cnit-e-`` resources the directory's guard cleans up, so they leave those alone."""
    yield


def ip(*argv: str, check: bool = True) -> str:
    return subprocess.run(["ip", *argv], capture_output=True, text=True, check=check).stdout


@pytest.fixture
def netns():
    name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
    ip("netns", "add", name)
    try:
        ip("-n", name, "link", "set", "lo", "up")
        ip("-n", name, "link", "add", "cnit-rt0", "type", "veth", "peer", "name", "cnit-rt1")
        ip("-n", name, "link", "set", "cnit-rt0", "up")
        ip("-n", name, "link", "set", "cnit-rt1", "up")
        ip("-n", name, "addr", "add", "10.201.0.1/24", "dev", "cnit-rt0")
        ip("-n", name, "addr", "add", "fd01::1/64", "dev", "cnit-rt0", "nodad")
        yield name
    finally:
        ip("netns", "del", name, check=False)


def reconcile(netns: str, check: bool = False, **params) -> dict:
    """The service's run in the namespace: {"result", "warnings", "error"}."""
    done = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", RUNNER,
                           json.dumps(dict(params, check=check)), str(UTILS)],
                          capture_output=True, text=True, check=True, env=os.environ)
    return json.loads(done.stdout)


def kernel_routes(netns: str, *selector: str, family: str = "-4") -> list:
    """`ip route` lines of the namespace's main table."""
    return [line.strip() for line in ip("-n", netns, family, "route", "show", *selector).splitlines()]


def own_routes(netns: str, family: str = "-4") -> list:
    return kernel_routes(netns, "proto", "210", family=family)


def test_converges_then_a_rerun_changes_nothing(netns):
    first = reconcile(netns, routes=PEERS, within=[CLUSTER])
    assert first["error"] is None and first["result"]["changed"]
    assert own_routes(netns) == ["unreachable 10.244.0.0/24 metric 4000",
                                 "10.244.1.0/24 via 10.201.0.12 dev cnit-rt0",
                                 "10.244.2.0/24 via 10.201.0.13 dev cnit-rt0"]
    assert [route["name"] for route in first["result"]["added"]] == ["fleet-2", "fleet-3", "fleet-1"]
    assert first["result"]["added"][0] == {"dst": "10.244.1.0/24", "via": "10.201.0.12", "dev": "cnit-rt0",
                                           "type": "unicast", "metric": 0, "table": 254, "name": "fleet-2"}
    assert first["result"]["diff"]["before"] == ""
    assert first["result"]["diff"]["after"].splitlines()[1] == \
        "10.244.1.0/24 via 10.201.0.12 dev cnit-rt0 proto 210 metric 0"

    again = reconcile(netns, routes=PEERS, within=[CLUSTER])
    assert again["error"] is None and not again["result"]["changed"]
    assert (again["result"]["added"], again["result"]["replaced"], again["result"]["removed"]) == ([], [], [])
    assert again["result"]["routes"] == first["result"]["routes"]
    assert again["result"]["diff"]["before"] == again["result"]["diff"]["after"] == first["result"]["diff"]["after"]


def test_check_mode_predicts_the_run_and_changes_nothing(netns):
    reconcile(netns, routes=PEERS[:2], within=[CLUSTER])
    moved = [dict(PEERS[0], via="10.201.0.22"), PEERS[2]]  # fleet-2 moved, fleet-3 left, fleet-1's own added
    before = own_routes(netns)

    predicted = reconcile(netns, check=True, routes=moved, within=[CLUSTER])
    assert own_routes(netns) == before
    real = reconcile(netns, routes=moved, within=[CLUSTER])

    assert predicted["result"] == real["result"]
    assert real["result"]["changed"]
    assert [r["dst"] for r in real["result"]["added"]] == ["10.244.0.0/24"]
    assert [r["via"] for r in real["result"]["replaced"]] == ["10.201.0.22"]
    assert [r["dst"] for r in real["result"]["removed"]] == ["10.244.2.0/24"]


def test_a_peer_not_on_link_fails_naming_it_and_changes_nothing(netns):
    reconcile(netns, routes=PEERS, within=[CLUSTER])
    before = own_routes(netns)
    far = {"dst": "10.244.7.0/24", "via": "10.202.0.5", "name": "far-peer"}
    # fleet-3 dropped and fleet-2 moved: a run that could go ahead would change both.
    outcome = reconcile(netns, routes=[dict(PEERS[0], via="10.201.0.22"), far], within=[CLUSTER])
    assert outcome["error"] is not None
    assert "far-peer (10.244.7.0/24) via 10.202.0.5" in outcome["error"]["msg"]
    assert "not directly reachable" in outcome["error"]["msg"]
    assert outcome["error"]["routes"][0]["name"] == "far-peer"
    assert own_routes(netns) == before


def test_a_gateway_reached_through_another_gateway_is_not_on_link(netns):
    ip("-n", netns, "route", "add", "10.203.0.0/24", "via", "10.201.0.254")
    outcome = reconcile(netns, routes=[{"dst": "10.244.8.0/24", "via": "10.203.0.5", "name": "behind-router"}],
                        within=[CLUSTER])
    assert "ip route get answers via 10.201.0.254 dev cnit-rt0" in outcome["error"]["msg"]
    assert own_routes(netns) == []


def test_a_foreign_static_route_inside_within_is_left_and_reported(netns):
    ip("-n", netns, "route", "add", "10.244.9.0/24", "via", "10.201.0.99", "proto", "static")
    outcome = reconcile(netns, routes=PEERS, within=[CLUSTER])
    assert outcome["result"]["conflicts"] == [{"dst": "10.244.9.0/24", "via": "10.201.0.99", "dev": "cnit-rt0",
                                               "type": "unicast", "metric": 0, "table": 254, "protocol": 4}]
    assert len(outcome["warnings"]) == 1 and "10.244.9.0/24" in outcome["warnings"][0]
    assert "its protocol is 4 (static), cni_route's 210" in outcome["warnings"][0]
    assert kernel_routes(netns, "proto", "static") == ["10.244.9.0/24 via 10.201.0.99 dev cnit-rt0"]
    # The bridge's connected route of a host's own subnet is not a conflict.
    assert all(conflict["protocol"] != 2 for conflict in outcome["result"]["conflicts"])


def test_a_foreign_route_with_a_desired_dst_and_metric_fails_before_anything_changes(netns):
    ip("-n", netns, "route", "add", "10.244.2.0/24", "via", "10.201.0.99", "proto", "static")
    outcome = reconcile(netns, routes=PEERS, within=[CLUSTER])
    assert "fleet-3 (10.244.2.0/24)" in outcome["error"]["msg"] and "protocol 4 (static)" in outcome["error"]["msg"]
    assert own_routes(netns) == []


def test_own_stale_route_is_removed(netns):
    reconcile(netns, routes=PEERS, within=[CLUSTER])
    outcome = reconcile(netns, routes=[PEERS[0], PEERS[2]], within=[CLUSTER])
    assert [r["dst"] for r in outcome["result"]["removed"]] == ["10.244.2.0/24"]
    assert own_routes(netns) == ["unreachable 10.244.0.0/24 metric 4000",
                                 "10.244.1.0/24 via 10.201.0.12 dev cnit-rt0"]


def test_state_absent_removes_only_its_own_inside_within(netns):
    reconcile(netns, routes=PEERS, within=[CLUSTER])
    ip("-n", netns, "route", "add", "10.99.0.0/24", "via", "10.201.0.12", "proto", "210")  # own, outside within
    ip("-n", netns, "route", "add", "10.244.9.0/24", "via", "10.201.0.99", "proto", "static")  # foreign, inside

    outcome = reconcile(netns, within=[CLUSTER], state="absent")

    assert outcome["result"]["changed"] and len(outcome["result"]["removed"]) == 3
    assert own_routes(netns) == ["10.99.0.0/24 via 10.201.0.12 dev cnit-rt0"]
    assert kernel_routes(netns, "proto", "static") == ["10.244.9.0/24 via 10.201.0.99 dev cnit-rt0"]
    assert not reconcile(netns, within=[CLUSTER], state="absent")["result"]["changed"]


def test_ipv6_routes_converge_and_go(netns):
    routes = [{"dst": "fd00:244:0:1::/64", "via": "fd01::12", "name": "fleet-2"},
              {"dst": "fd00:244::/64", "type": "unreachable", "metric": 4000, "name": "fleet-1"}]
    within = ["fd00:244::/48"]
    first = reconcile(netns, routes=routes, within=within)
    assert first["error"] is None and first["result"]["changed"]
    assert own_routes(netns, family="-6") == ["unreachable fd00:244::/64 dev lo metric 4000 pref medium",
                                              "fd00:244:0:1::/64 via fd01::12 dev cnit-rt0 metric 1024 pref medium"]
    assert first["result"]["routes"][1] == {"dst": "fd00:244:0:1::/64", "via": "fd01::12", "dev": "cnit-rt0",
                                            "type": "unicast", "metric": 1024, "table": 254}
    assert not reconcile(netns, routes=routes, within=within)["result"]["changed"]
    far = reconcile(netns, routes=[{"dst": "fd00:244:0:2::/64", "via": "fd02::5", "name": "far6"}], within=within)
    assert "far6 (fd00:244:0:2::/64) via fd02::5" in far["error"]["msg"]
    gone = reconcile(netns, within=within, state="absent")
    assert gone["result"]["changed"] and own_routes(netns, family="-6") == []


def test_a_route_the_kernel_refuses_mid_batch_rolls_back_what_the_run_did(netns):
    reconcile(netns, routes=PEERS, within=[CLUSTER])
    before = own_routes(netns)
    wanted = [dict(PEERS[0], via="10.201.0.22"), PEERS[2], {"dst": "10.244.3.0/24", "via": "10.201.0.14"},
              {"dst": "10.244.4.0/24", "via": "10.201.0.15"}]  # replace, keep, add, add; fleet-3 removed

    outcome = reconcile(netns, routes=wanted, within=[CLUSTER], refuse="10.244.4.0/24")

    assert "add route 10.244.4.0/24: Network is unreachable" in outcome["error"]["msg"]
    assert "put back" in outcome["error"]["msg"] and "rollback_errors" not in outcome["error"]
    assert outcome["result"]["changed"] is False
    assert own_routes(netns) == before


def test_routes_in_another_table_leave_main_alone(netns):
    outcome = reconcile(netns, routes=PEERS[:1], within=[CLUSTER], table=1000)
    assert outcome["result"]["routes"][0]["table"] == 1000
    assert own_routes(netns) == []
    assert kernel_routes(netns, "table", "1000") == ["10.244.1.0/24 via 10.201.0.12 dev cnit-rt0 proto 210"]
