# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The routed_network role's variables without a play: the peer routes come from the allocation's
result alone, and the role's facts never take the name of a variable the operator sets. (The
role as Ansible runs it is molecule's scenario cluster.)"""

from __future__ import annotations

import ast
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

    routes = ast.literal_eval(template.render(cni_cluster_allocation=allocation, inventory_hostname="b"))

    assert routes == [{"dst": "10.244.0.0/24", "via": "192.0.2.1", "name": "a"},
                      {"dst": "10.244.2.0/24", "via": "192.0.2.3", "name": "c"}]


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
