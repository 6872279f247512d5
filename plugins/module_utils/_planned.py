# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Check mode across tasks: cni_network, which writes nothing in check mode, records the conflist
it would have written as a host fact; cni_attach's action plugin hands those to the module, which
predicts against them instead of the unchanged files."""

from __future__ import annotations

PLANNED_FACT_PREFIX = "cnikit_cni_planned_network_"
PLANNED_OPTION = "_planned_networks"  # internal: set by the action plugin, never by users


def planned_fact(name: str, conf_dir: str, config: dict) -> dict:
    """The ``ansible_facts`` cni_network returns in check mode for a conflist it would write."""
    return {PLANNED_FACT_PREFIX + name: {"conf_dir": conf_dir, "config": config}}


def planned_config(planned: dict | None, name: str, conf_dir: str) -> dict | None:
    """The conflist a check-mode cni_network task planned for network ``name`` in ``conf_dir``."""
    plan = (planned or {}).get(name)
    if isinstance(plan, dict) and plan.get("conf_dir") == conf_dir and isinstance(plan.get("config"), dict):
        return plan["config"]
    return None
