# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""How messages word what they list, so that every message lists alike."""

from __future__ import annotations

# How many items a message names before it only counts the rest.
SHOWN = 3


def first_few(items: list) -> str:
    """The first few ``items`` (strings), then how many more: ``a; b; c and 2 more``."""
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more
