# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_cluster_subnets: the routed network's subnets file, kept on the controller. No module runs
on the host: the options are validated here, and the task (_cluster_subnets_task.run) does the rest."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.cnikit.cni.plugins.module_utils._cluster_subnets_task import OPTIONS, run
from ansible_collections.cnikit.cni.plugins.module_utils._errors import CNIError, error_result


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # unused since ansible-core 2.x, kept in the signature
        _validation, args = self.validate_argument_spec(argument_spec=OPTIONS)
        try:
            result.update(run(args, check_mode=bool(self._task.check_mode)))
        except (CNIError, OSError) as error:
            result.update(failed=True, **error_result(error))
        return result
