# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Argument specs as data, so that each service declares its module's options once: the module
hands the spec to AnsibleModule, and the service, the roles' specs and the tests read the same
object. Plain dicts and tuples in AnsibleModule's own format; nothing here imports Ansible."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ._defaults import DEFAULT_CACHE_DIR, DEFAULT_CNI_PATH, DEFAULT_CONF_DIR, DEFAULT_TIMEOUT

# The options every module of the collection takes, so that ``module_defaults`` for
# ``group/cnikit.cni.cni`` can set them once (a module given an option it does not take fails).
# Documented by the doc fragments of plugins/doc_fragments/_paths.py.
PATH_OPTIONS = {
    "cni_path": {"type": "list", "elements": "path", "default": list(DEFAULT_CNI_PATH)},
    "conf_dir": {"type": "path", "default": DEFAULT_CONF_DIR},
    "cache_dir": {"type": "path", "default": DEFAULT_CACHE_DIR},
    "timeout": {"type": "float", "default": DEFAULT_TIMEOUT},
}


@dataclass(frozen=True)
class ArgumentSpec:
    """A module's options and the rules between them, as AnsibleModule takes them. The shared
    path options are always part of it."""

    options: dict
    mutually_exclusive: tuple = ()
    required_if: tuple = ()
    add_file_common_args: bool = False

    def all_options(self) -> dict:
        """The module's own options and the shared ones."""
        return {**self.options, **PATH_OPTIONS}

    def module_kwargs(self) -> dict:
        """AnsibleModule's keyword arguments. The options are a copy: AnsibleModule adds to
        the dict it is given (Ansible's file options, with ``add_file_common_args``), and the
        spec the services, roles and tests read must stay the module's own."""
        return {
            "argument_spec": copy.deepcopy(self.all_options()),
            "mutually_exclusive": [list(group) for group in self.mutually_exclusive],
            "required_if": [list(rule) for rule in self.required_if],
            "add_file_common_args": self.add_file_common_args,
        }
