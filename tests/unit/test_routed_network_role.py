# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The routed_network role's variables without a play: the peer routes come from the allocation's
result alone, and the role's facts never take the name of a variable the operator sets. (The
role as Ansible runs it is molecule's scenario cluster.)"""

from __future__ import annotations

import ast
import base64
import json
from pathlib import Path

import jinja2
import pytest
import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"
ROLE = ROLES / "routed_network"


def role_vars() -> dict:
    return yaml.safe_load((ROLE / "vars" / "main.yml").read_text(encoding="utf-8"))


def test_the_peer_routes_go_via_the_addresses_the_allocation_checked():
    """Nothing but the registered allocation: cni_cluster_members (undefined here) would be built
    again for every peer, and its address is the inventory's text, trailing space and all."""
    allocation = {"subnets": {"a": "10.244.0.0/24", "b": "10.244.1.0/24", "c": "10.244.2.0/24"},
                  "addresses": {"a": "192.0.2.1", "b": "192.0.2.2", "c": "192.0.2.3"}}
    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(role_vars()["cni_cluster_peer_routes"])

    routes = ast.literal_eval(template.render(cni_cluster_allocation=allocation, inventory_hostname="b",
                                              cni_cluster_families=[""], cni_cluster_vxlan_peer_names=[]))

    assert routes == [{"dst": "10.244.0.0/24", "via": "192.0.2.1", "name": "a"},
                      {"dst": "10.244.2.0/24", "via": "192.0.2.3", "name": "c"}]


def test_a_dual_stack_networks_ipv6_routes_go_via_the_peers_ipv6_addresses():
    allocation = {"subnets": {"a": "10.244.0.0/24", "b": "10.244.1.0/24"}, "addresses": {"a": "192.0.2.1", "b": "192.0.2.2"},
                  "subnets_v6": {"a": "fd44::/64", "b": "fd44:0:0:1::/64"},
                  "addresses_v6": {"a": "2001:db8::1", "b": "2001:db8::2"}}
    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(role_vars()["cni_cluster_peer_routes"])

    routes = ast.literal_eval(template.render(cni_cluster_allocation=allocation, inventory_hostname="b",
                                              cni_cluster_families=["", "_v6"], cni_cluster_vxlan_peer_names=[]))

    assert routes == [{"dst": "10.244.0.0/24", "via": "192.0.2.1", "name": "a"},
                      {"dst": "fd44::/64", "via": "2001:db8::1", "name": "a"}]


def test_a_vxlan_peer_is_routed_through_its_vtep_onlink_and_the_others_via_their_address():
    allocation = {"subnets": {"a": "10.244.0.0/24", "b": "10.244.1.0/24", "c": "10.244.2.0/24"},
                  "addresses": {"a": "192.0.2.1", "b": "192.0.2.2", "c": "198.51.100.3"}}
    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(role_vars()["cni_cluster_peer_routes"])

    routes = ast.literal_eval(template.render(cni_cluster_allocation=allocation, inventory_hostname="b",
                                              cni_cluster_families=[""], cni_cluster_vxlan_peer_names=["c"],
                                              cni_cluster_vxlan_device="cni-vxlan0"))

    assert routes == [{"dst": "10.244.0.0/24", "via": "192.0.2.1", "name": "a"},
                      {"dst": "10.244.2.0/24", "via": "10.244.2.0", "dev": "cni-vxlan0", "onlink": True, "name": "c"}]


def test_each_vxlan_peer_has_its_vtep_and_a_mac_every_host_computes_alike():
    allocation = {"subnets": {"a": "10.244.0.0/24", "b": "10.244.1.0/24", "c": "10.244.202.0/24"},
                  "addresses": {"a": "192.0.2.1", "b": "192.0.2.2", "c": "198.51.100.3"}}
    endpoints = ast.literal_eval(render_var("cni_cluster_vxlan_endpoints", cni_cluster_allocation=allocation))
    peers = ast.literal_eval(render_var("cni_cluster_vxlan_peers", cni_cluster_allocation=allocation,
                                        cni_cluster_vxlan_endpoints=endpoints, inventory_hostname="a",
                                        cni_cluster_vxlan_peer_names=["c"]))
    own = render_var("cni_cluster_vxlan_mac", cni_cluster_vxlan_endpoints=endpoints, inventory_hostname="c")

    assert peers == [{"name": "c", "subnet": "10.244.202.0/24", "vtep": "10.244.202.0", "mac": "0a:58:0a:f4:ca:00",
                      "underlay": "198.51.100.3"}]
    assert own == "0a:58:0a:f4:ca:00"  # c's own MAC, as c computes it, is the one a points at


@pytest.mark.parametrize("vxlan_peers, override, address, expected", [
    ([], None, "192.0.2.1", 1500),
    ([{"name": "c"}], None, "192.0.2.1", 1450),
    ([{"name": "c"}], None, "2001:db8::1", 1430),
    ([{"name": "c"}], 1400, "192.0.2.1", 1400),
])
def test_the_mtu_is_the_uplinks_less_vxlans_header_unless_overridden(vxlan_peers, override, address, expected):
    context = {"cni_cluster_underlay": {"mtu": 1500}, "cni_cluster_vxlan_peers": vxlan_peers,
               "cni_cluster_allocation": {"addresses": {"a": address}}, "inventory_hostname": "a"}
    if override is not None:
        context["cni_cluster_mtu"] = override
    overhead = render_var("cni_cluster_vxlan_overhead", **context)
    assert int(render_var("cni_cluster_network_mtu", cni_cluster_vxlan_overhead=overhead, **context)) == expected


def render_var(name: str, **context) -> str:
    """A variable of vars/main.yml rendered as Ansible would, with the variables it refers to given
    (rendered first when they are the role's own too) and the Ansible filters they use."""
    variables = role_vars()
    environment = ansible_like_environment()
    for own in ("cni_cluster_dual_stack", "cni_cluster_flannel_env_header"):
        if own not in context and own in variables[name]:
            context[own] = environment.from_string(str(variables[own])).render(**context)
    return environment.from_string(variables[name]).render(**context)


def render_expression(expression: str, **context) -> str:
    """A task's templated value, rendered as render_var renders the role's variables."""
    return ansible_like_environment().from_string(expression).render(**context)


def ansible_like_environment() -> jinja2.Environment:
    """Jinja with the few filters of Ansible's that the role's variables use."""
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    environment.filters["bool"] = lambda value: value if isinstance(value, bool) else str(value).lower() in ("true", "yes", "1")
    environment.filters["combine"] = lambda first, second: {**first, **second}
    environment.filters["b64decode"] = lambda text: base64.b64decode(text).decode()
    environment.filters["from_json"] = json.loads
    return environment


@pytest.mark.parametrize("dual, masquerade, expected", [
    (False, True, ["FLANNEL_NETWORK=10.244.0.0/16", "FLANNEL_SUBNET=10.244.1.1/24", "FLANNEL_MTU=1500",
                   "FLANNEL_IPMASQ=true"]),
    (True, False, ["FLANNEL_NETWORK=10.244.0.0/16", "FLANNEL_SUBNET=10.244.1.1/24", "FLANNEL_IPV6_NETWORK=fd44::/48",
                   "FLANNEL_IPV6_SUBNET=fd44:0:0:1::1/64", "FLANNEL_MTU=1500", "FLANNEL_IPMASQ=false"]),
])
def test_flannels_subnet_file_is_in_flannels_format_under_the_roles_header(dual, masquerade, expected):
    allocation = {"gateways": {"b": "10.244.1.1/24"}, "gateways_v6": {"b": "fd44:0:0:1::1/64"}}
    text = render_var("cni_cluster_flannel_env_text", cni_cluster_allocation=allocation, inventory_hostname="b",
                      cni_cluster_network="cluster", cni_cluster_cidr="10.244.0.0/16",
                      cni_cluster_cidr_v6="fd44::/48" if dual else "", cni_cluster_masquerade=masquerade,
                      cni_cluster_network_mtu=1500)
    lines = text.splitlines()
    assert lines[0] == "# Written by cnikit.cni.routed_network for the network cluster, in place of flanneld"
    assert "=" not in lines[0]  # flannel's reader skips a line without one
    assert lines[1:] == expected


def set_facts(tasks: list) -> set:
    """The names the tasks (and the tasks of their blocks) set as facts."""
    names = set()
    for task in tasks:
        names.update(task.get("ansible.builtin.set_fact") or task.get("set_fact") or {})
        for section in ("block", "rescue", "always"):
            names |= set_facts(task.get(section) or [])
    return names


@pytest.mark.parametrize("role", sorted(path.name for path in ROLES.iterdir()))
def test_no_fact_of_a_role_takes_the_name_of_its_input(role):
    """A fact outranks host variables: a run of the role later in the same playbook run would read
    the fact as the operator's value (the own subnet as a pin, say)."""
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    options = {name for entry in specs["argument_specs"].values() for name in entry.get("options", {})}
    facts = set().union(*(set_facts(yaml.safe_load(path.read_text(encoding="utf-8")) or [])
                          for path in (ROLES / role / "tasks").glob("*.yml")))
    assert facts & options == set()


def present_task(matches) -> dict:
    """The one task of present.yml for which ``matches(task)`` holds."""
    tasks = [task for task in yaml.safe_load((ROLE / "tasks" / "present.yml").read_text(encoding="utf-8")) if matches(task)]
    assert len(tasks) == 1
    return tasks[0]


def report_expression() -> str:
    """The expression of present.yml's fact of the attachments that keep an older MTU."""
    task = present_task(lambda task: "cni_cluster_mtu_outdated_attachments" in task.get("ansible.builtin.set_fact", {}))
    return task["ansible.builtin.set_fact"]["cni_cluster_mtu_outdated_attachments"]


@pytest.mark.parametrize("network_file, mtu_now, expected", [
    (None, 1450, 0),  # no file before this run: no attachment was made with another MTU
    ({"plugins": [{"type": "bridge"}]}, 1450, 2),  # a file without an MTU: the kernel's 1500
    ({"plugins": [{"type": "bridge", "mtu": 1450}]}, 1450, 0),
    ({"plugins": [{"type": "bridge", "mtu": 1500}]}, 1450, 2),
    ({"plugins": [{"type": "bridge", "mtu": 1450}]}, 1500, 2),
])
def test_attachments_made_with_another_mtu_are_reported(network_file, mtu_now, expected):
    slurped = {} if network_file is None else {"content": base64.b64encode(json.dumps(network_file).encode()).decode()}
    attachments = [{"network": "cluster"}, {"network": "cluster"}, {"network": "other"}]
    context = {"cni_cluster_network_file": slurped, "cni_cluster_network": "cluster",
               "cni_cluster_observed": {"attachments": attachments}, "cni_cluster_network_mtu": mtu_now}
    context["cni_cluster_mtu_before"] = render_var("cni_cluster_mtu_before", **context)
    context["cni_cluster_observed_attachments"] = render_var("cni_cluster_observed_attachments", **context)

    assert int(render_expression(report_expression(), **context)) == expected


def vxlan_family_check() -> dict:
    return present_task(lambda task: task.get("name") == "Check VXLAN is asked only of a network of IPv4 alone")[
        "ansible.builtin.assert"]


@pytest.mark.parametrize("cidr, cidr_v6, vxlan_peers, passes, families", [
    ("10.244.0.0/16", "", ["c"], True, "IPv4"),
    ("10.244.0.0/16", "fd44::/48", [], True, "IPv4 and IPv6"),
    ("10.244.0.0/16", "fd44::/48", ["c"], False, "IPv4 and IPv6"),
    ("fd44::/48", "", ["c"], False, "IPv6"),  # an IPv6 network has no IPv4 VTEP addresses
])
def test_vxlan_is_refused_for_a_network_with_an_ipv6_family(cidr, cidr_v6, vxlan_peers, passes, families):
    context = {"cni_cluster_cidr": cidr, "cni_cluster_cidr_v6": cidr_v6, "cni_cluster_vxlan_peer_names": vxlan_peers,
               "cni_cluster_backend": "auto"}
    context["cni_cluster_families_of_network"] = ast.literal_eval(render_var("cni_cluster_families_of_network", **context))
    check = vxlan_family_check()

    assert render_expression("{{ " + check["that"] + " }}", **context) == str(passes)
    assert f"this {families} network would reach c through VXLAN" in " ".join(
        render_expression(check["fail_msg"], **{**context, "cni_cluster_vxlan_peer_names": ["c"]}).split())
