# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a failed task returns of an error (_errors.error_result), the one translation both the
modules (_ansible_glue.fail_from_error) and the cni_cluster_subnets action use."""

from __future__ import annotations

import errno

from ansible_collections.cnikit.cni.plugins.module_utils._errors import (
    CNIError, ConfigError, OperationError, PluginError, error_result)


def test_a_config_error_gives_its_message_and_its_path_and_value():
    assert error_result(ConfigError("members.a.address", "is not an IP address", "node-a")) == {
        "msg": "members.a.address: is not an IP address (got 'node-a')",
        "error": {"path": "members.a.address", "value": "node-a"}}


def test_an_operation_error_gives_its_whole_story_and_its_causes_fields():
    cause = PluginError("bridge", "ADD", "no such device", code=11)
    cleanup = CNIError("rollback DEL failed")
    result = error_result(OperationError("ADD failed", cause, [cleanup]))
    assert result["msg"] == f"ADD failed: {cause}; rollback also failed: rollback DEL failed"
    assert result["error"]["plugin"] == "bridge" and result["error"]["code"] == 11
    assert result["error"]["rollback_errors"] == [{"msg": "rollback DEL failed"}]
    assert "msg" not in result["error"]


def test_an_os_error_gives_its_message_alone():
    assert error_result(PermissionError(errno.EACCES, "Permission denied")) == {
        "msg": "[Errno 13] Permission denied", "error": {}}
