# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_cluster_member's task: its options (ARGUMENT_SPEC) and run, keeping a member host's
record, forwarding and chains with ``_cluster_member``."""

from __future__ import annotations

from ._argspec import ArgumentSpec
from ._cache_dir import warn_of_cache_dir
from ._cluster_member import chain_names, plan_absent, plan_present, read_record, record_path, wanted_record
from ._errors import CNIError
from ._identifiers import check_network_name


ARGUMENT_SPEC = ArgumentSpec({
    "network": {"type": "str", "required": True},
    "cidr": {"type": "str"},
    "subnet": {"type": "str"},
    "masquerade": {"type": "bool", "default": True},
    "cidr_v6": {"type": "str"},
    "subnet_v6": {"type": "str"},
    "address_v6": {"type": "str"},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
}, required_if=(("state", "present", ("cidr", "subnet")),))


def run(host, params: dict, result: dict) -> None:
    """``host`` is the module's ``_ansible_glue.ModuleHost``."""
    network = check_network_name(params["network"], "network")
    cache_dir = params["cache_dir"]
    warn_of_cache_dir(host, cache_dir)
    record = read_record(cache_dir, network)
    result.update(changed=False, record=record, path=record_path(cache_dir, network),
                  chains=chain_names(network), changes=[],
                  kept={"sysctls": [], "chains": []})
    if params["state"] == "present":
        wanted = wanted_record(params, record)
        plan = plan_present(host, cache_dir, record, wanted, params.get("address_v6"))
    else:
        plan = plan_absent(host, cache_dir, network, record)
    result["changes"] = [step.description for step in plan.steps]
    result["kept"] = plan.kept()
    result["changed"] = bool(plan.steps)
    if host.diff:
        result["diff"] = {"before": _diff_text(plan.before), "after": _diff_text(plan.after)}
    if host.check_mode:
        return
    for done, step in enumerate(plan.steps):
        try:
            step.apply()
        except (CNIError, OSError):
            result["changes"] = result["changes"][:done]  # what this run did before it failed
            result["changed"] = done > 0
            raise


def _diff_text(lines: list) -> str:
    return "".join(f"{line}\n" for line in lines)
