# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark helper, not part of the collection: records each task's wall time, from the
task's start to its final result, how many items changed and on how many hosts, into the JSON file named by
CNIT_BENCH_TIMINGS."""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: cnit_bench_timer
type: aggregate
short_description: Task wall times for the cnikit.cni benchmarks
description: Writes each task's wall time and changed count to the file named by E(CNIT_BENCH_TIMINGS).
"""


def _changed_items(result: dict) -> int:
    """Changed attachments: items of a batch task, or iterations of a loop."""
    if "attachments" in result:
        return sum(1 for item in result["attachments"] if item.get("changed"))
    if "results" in result:
        return sum(1 for item in result["results"] if item.get("changed"))
    return int(bool(result.get("changed")))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "cnit_bench_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._tasks = []
        self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._current = {"name": task.get_name(), "action": task.action, "start": time.time()}
        self._tasks.append(self._current)

    def _finish(self, result, failed: bool) -> None:
        """Called once per host: the task's time runs to its last host's result, its changed
        items are that host's; ``results`` and ``hosts_changed`` count over every host."""
        data = result._result  # pylint: disable=protected-access
        current = self._current
        current.update(end=time.time(), failed=failed or current.get("failed", False),
                       changed=bool(data.get("changed")), changed_items=_changed_items(data),
                       msg=str(data.get("msg", ""))[:2000], results=current.get("results", 0) + 1,
                       hosts_changed=current.get("hosts_changed", 0) + bool(data.get("changed")))
        current["seconds"] = current["end"] - current["start"]

    def v2_runner_on_ok(self, result):
        self._finish(result, failed=False)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._finish(result, failed=True)

    def v2_playbook_on_stats(self, stats):
        with open(os.environ["CNIT_BENCH_TIMINGS"], "w", encoding="utf-8") as out:
            json.dump(self._tasks, out, indent=1)
