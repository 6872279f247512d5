# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The disagreements between the validator and the binaries that are accepted, each with its
reason (docs/validation.md lists them from here), and the corpus files that are invalid as
written, with why."""

from __future__ import annotations

# case id -> (verdict, reason)
ACCEPTED_DISAGREEMENTS = {
    "bandwidth: burst of one byte at 1 Gbit/s": (
        "miss", "the kernel refuses a token bucket whose burst drains faster than its clock resolution; the limit "
                "depends on the host's packet scheduler clock, so only bursts and rates under 8 bits (0 bytes) are "
                "errors and smaller bursts are not judged"),
    "bandwidth: burst of one byte at 80 kbit/s": (
        "miss", "as above: a one-byte burst is refused at some rates (80 kbit/s) and accepted at others (8 bit/s), "
                "by the kernel's rounding of the bucket size"),
}

# Disagreements caused by a defect of the collection that another change fixes (issue 19, section 2):
# "<plugin>: <case id>" -> (the plugin releases it shows with, the defect). The test expects them to
# fail (strict xfail): once the defect is fixed, the entry must go.
KNOWN_DEFECTS: dict = {}

# corpus file -> why both the validator and the plugins reject it
INVALID_CORPUS = {
    "podman-libnetwork-ipam-static.conflist":
        "podman's own input format (addresses as a list of lists of subnet/gateway) in a parser test file; "
        "the static plugin needs address objects",
}
