# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_attach's action: in check mode, hand the module the conflists that cni_network tasks
earlier in the play would have written, so that its prediction is made against them (a
changed conflist predicts ``replaced``), not against the files check mode left unchanged."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.cnikit.cni.plugins.module_utils._planned import PLANNED_FACT_PREFIX, PLANNED_OPTION


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # unused since ansible-core 2.x, kept in the signature
        args = dict(self._task.args)
        if self._task.check_mode:
            facts = (task_vars or {}).get("ansible_facts") or {}
            planned = {key[len(PLANNED_FACT_PREFIX):]: value for key, value in facts.items()
                       if key.startswith(PLANNED_FACT_PREFIX)}
            if planned:
                args[PLANNED_OPTION] = planned
        result.update(self._execute_module(module_name="cnikit.cni.cni_attach", module_args=args,
                                           task_vars=task_vars, wrap_async=self._task.async_val))
        return result
