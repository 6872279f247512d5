# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ansible-core's patch_module_args (2.19 and later), and the same for the older releases the
collection supports, which read a module's arguments from basic._ANSIBLE_ARGS."""

from __future__ import annotations

import contextlib
import json

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core 2.16 to 2.18
    from ansible.module_utils import basic

    @contextlib.contextmanager
    def patch_module_args(args: dict | None = None):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}).encode()
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved

__all__ = ["patch_module_args"]
