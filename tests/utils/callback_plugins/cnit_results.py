# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test helper, not part of the collection: writes every task result of a playbook run (host, task,
changed, failed, skipped, and the result itself) as one JSON list into the file named by
CNIT_RESULTS, so that a scenario running a playbook of its own can assert what each host did."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: cnit_results
type: aggregate
short_description: Every task result of a run, for the cnikit.cni scenarios
description: Writes each host's task results to the JSON file named by E(CNIT_RESULTS).
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "cnit_results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._results = []

    def _record(self, result, outcome: str) -> None:
        # Plain JSON types only: the result may hold Ansible's tagged or unsafe strings.
        body = json.loads(json.dumps(result._result, default=str))
        self._results.append({"host": result._host.get_name(), "task": result._task.get_name(),
                              "action": result._task.action, "outcome": outcome,
                              "changed": bool(body.get("changed")), "result": body})

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._record(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        with open(os.environ["CNIT_RESULTS"], "w", encoding="utf-8") as out:
            json.dump(self._results, out, indent=1)
