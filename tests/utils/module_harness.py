# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Running a module's ``main()`` in-process with arguments as Ansible passes them, on every
supported ansible-core (2.16 to 2.20)."""

from __future__ import annotations

import contextlib
import json
from unittest import mock

from ansible.module_utils import basic

from ansible_collections.cnikit.cni.plugins.module_utils import _ansible_glue


@contextlib.contextmanager
def patch_module_args(args: dict):
    """Expose ``args`` to the AnsibleModule created inside. ansible-core 2.19 added its own helper
    (it also sets the serialization profile 2.19 reads); before, modules read only the JSON in
    ``basic._ANSIBLE_ARGS``, which is what ansible-core's own unit tests patched."""
    try:
        from ansible.module_utils.testing import patch_module_args as patch  # pylint: disable=import-outside-toplevel
    except ImportError:
        patch = None
    if patch is not None:
        with patch(args):
            yield
        return
    with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()):
        yield


def run_module(module, capsys, **args) -> dict:
    """The JSON a module prints when ``main()`` exits (with exit_json or fail_json)."""
    with patch_module_args(args):
        try:
            module.main()
        except SystemExit:
            pass
        else:
            raise AssertionError(f"{module.__name__}.main() returned without exit_json or fail_json")
    return json.loads(capsys.readouterr().out)


class _Accepted(Exception):
    """Raised by the module's AnsibleModule as soon as it has accepted the arguments."""

    def __init__(self, params: dict):
        super().__init__()
        self.params = params


def parse_arguments(module, capsys, **args) -> tuple:
    """How a module's AnsibleModule takes ``args`` (its argument spec with required, choices,
    defaults and exclusions), without running the module's logic: ``(params, None)`` when it
    accepts them, ``(None, failure result)`` when it rejects them."""
    class StopsOnceParsed(basic.AnsibleModule):
        def __init__(self, *spec_args, **spec_kwargs):
            super().__init__(*spec_args, **spec_kwargs)
            raise _Accepted(dict(self.params))

    with mock.patch.object(_ansible_glue, "AnsibleModule", StopsOnceParsed), patch_module_args(args):
        try:
            module.main()
        except _Accepted as accepted:
            return accepted.params, None
        except SystemExit:
            return None, json.loads(capsys.readouterr().out)
    raise AssertionError(f"{module.__name__}.main() neither created its AnsibleModule nor failed")
