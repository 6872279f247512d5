# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The networks role hands each network's options to cni_network: its argument spec offers the
module's options, typed as the module types them, and its task passes every one through. A new
cni_network option the role forgets, or a default that drifts, fails here."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.cnikit.cni.plugins.module_utils._conflist import CONF_FILE_EXTENSIONS
from ansible_collections.cnikit.cni.plugins.module_utils._network_task import ARGUMENT_SPEC

ROLE = Path(__file__).resolve().parents[2] / "roles" / "networks"

# cni_network's options a network of the role does not set itself, and why.
NOT_PER_NETWORK = {
    "conf_dir": "the role's cni_networks_conf_dir, for every network",
    "cni_path": "the role's cni_networks_cni_path, for every network",
    "validate_only": "lints without writing; the role declares networks",
    "cache_dir": "the module's default, as a runtime's",
    "timeout": "the module's default",
}
# What an option's spec must agree on between the module and the role.
SPEC_KEYS = ("type", "elements", "choices", "default", "required")


def module_options() -> dict:
    """cni_network's options, as its service declares them for the module."""
    return ARGUMENT_SPEC.all_options()


def role_network_options() -> dict:
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    return specs["argument_specs"]["main"]["options"]["cni_networks"]["options"]


def declare_task_args() -> dict:
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text(encoding="utf-8"))
    (task,) = [t for t in tasks if "cnikit.cni.cni_network" in t]
    return task["cnikit.cni.cni_network"]


def test_the_role_offers_every_per_network_option_of_cni_network():
    assert set(role_network_options()) == set(module_options()) - set(NOT_PER_NETWORK)


@pytest.mark.parametrize("option", sorted(set(module_options()) - set(NOT_PER_NETWORK)))
def test_the_role_types_each_option_as_cni_network_does(option):
    module_spec, role_spec = module_options()[option], role_network_options()[option]
    assert {k: module_spec.get(k) for k in SPEC_KEYS} == {k: role_spec.get(k) for k in SPEC_KEYS}


def test_the_role_passes_every_option_through():
    args = declare_task_args()
    expected = {option: f"{{{{ item.{option} | default(omit) }}}}" for option in role_network_options()}
    expected["name"] = "{{ item.name }}"
    expected.update(conf_dir="{{ cni_networks_conf_dir }}", cni_path="{{ cni_networks_cni_path }}")
    assert args == expected


def test_the_purge_finds_the_files_runtimes_load_networks_from():
    """The role's find patterns are the conf file extensions libcni (and _conflist) loads."""
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text(encoding="utf-8"))
    (purge,) = [t for t in tasks if "block" in t]
    (find,) = [t["ansible.builtin.find"] for t in purge["block"] if "ansible.builtin.find" in t]
    assert find["patterns"] == [f"*{extension}" for extension in CONF_FILE_EXTENSIONS]
