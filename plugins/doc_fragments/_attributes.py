# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This doc fragment is PRIVATE and should only be used by this collection.
"""Descriptions of the attributes the collection's modules declare."""

from __future__ import annotations


class ModuleDocFragment:

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
"""

    ACTIONGROUP_CNI = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/cnikit.cni.cni) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - cnikit.cni.cni
"""

    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
  idempotent:
    support: full
"""
