# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The option defaults' one home is _defaults.py; the doc fragments and the roles must spell them
too (Ansible's documentation and a role's argument spec cannot import Python). Each spelling is
held to it here, so that a default changed in one place fails until it is changed in all.
(A module's own DOCUMENTATION is held to its argument spec by ansible-test's validate-modules.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.cnikit.cni.plugins.doc_fragments import _paths
from ansible_collections.cnikit.cni.plugins.module_utils import _defaults

ROOT = Path(__file__).resolve().parents[2]

# Each spelling: (where, the option in it) -> the default it must equal.
DOC_FRAGMENTS = {
    ("CNI_PATH", "cni_path"): list(_defaults.DEFAULT_CNI_PATH),
    ("CNI_PATH_UNUSED", "cni_path"): list(_defaults.DEFAULT_CNI_PATH),
    ("CONF_DIR", "conf_dir"): _defaults.DEFAULT_CONF_DIR,
    ("CONF_DIR_UNUSED", "conf_dir"): _defaults.DEFAULT_CONF_DIR,
    ("CACHE_DIR", "cache_dir"): _defaults.DEFAULT_CACHE_DIR,
    ("CACHE_DIR_UNUSED", "cache_dir"): _defaults.DEFAULT_CACHE_DIR,
    ("TIMEOUT", "timeout"): _defaults.DEFAULT_TIMEOUT,
    ("TIMEOUT_UNUSED", "timeout"): _defaults.DEFAULT_TIMEOUT,
}
ROLE_VARIABLES = {
    ("networks", "cni_networks_conf_dir"): _defaults.DEFAULT_CONF_DIR,
    ("networks", "cni_networks_cni_path"): list(_defaults.DEFAULT_CNI_PATH),
    ("plugins", "cni_plugins_dest"): _defaults.DEFAULT_CNI_PATH[0],
    ("plugins", "cni_plugins_timeout"): _defaults.DEFAULT_TIMEOUT,
    ("routed_network", "cni_cluster_host_prefix"): _defaults.DEFAULT_CLUSTER_HOST_PREFIX,
    ("routed_network", "cni_cluster_conf_dir"): _defaults.DEFAULT_CONF_DIR,
    ("routed_network", "cni_cluster_cni_path"): list(_defaults.DEFAULT_CNI_PATH),
    ("routed_network", "cni_cluster_cache_dir"): _defaults.DEFAULT_CACHE_DIR,
}


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("fragment, option", sorted(DOC_FRAGMENTS))
def test_the_doc_fragments_document_the_defaults(fragment, option):
    documented = yaml.safe_load(getattr(_paths.ModuleDocFragment, fragment))["options"][option]["default"]
    assert documented == DOC_FRAGMENTS[fragment, option]


@pytest.mark.parametrize("role, variable", sorted(ROLE_VARIABLES))
def test_the_roles_defaults_and_argument_specs_spell_the_defaults(role, variable):
    defaults = _yaml(ROOT / "roles" / role / "defaults" / "main.yml")
    specs = _yaml(ROOT / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert defaults[variable] == ROLE_VARIABLES[role, variable]
    assert specs[variable]["default"] == ROLE_VARIABLES[role, variable]
