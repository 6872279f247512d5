# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_wording: how messages list what they are about."""

from __future__ import annotations

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._wording import first_few


@pytest.mark.parametrize("items, said", [
    (["a"], "a"),
    (["a", "b", "c"], "a; b; c"),
    (["a", "b", "c", "d"], "a; b; c and 1 more"),
    (["a", "b", "c", "d", "e", "f"], "a; b; c and 3 more"),
])
def test_first_few_names_three_then_counts_the_rest(items, said):
    assert first_few(items) == said
