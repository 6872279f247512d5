# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check the requirements ansible-builder introspected from the installed collection against
tests/ee/expected-requirements.yml: the Python packages, and the system packages bindep selects
for each platform family (what an execution environment on that base image installs).

Usage: check_ee_requirements.py <expected.yml> <pip requirements file> <bindep file>
Runs in the virtualenv that has ansible-builder (and so bindep)."""

from __future__ import annotations

import re
import sys

import yaml
from bindep.depends import Depends

# bindep's profiles of a typical host of each family.
PLATFORM_PROFILES = {
    "dpkg": ["platform:dpkg", "platform:debian"],
    "rpm": ["platform:rpm", "platform:redhat"],
}


def main(expected_file: str, pip_file: str, bindep_file: str) -> int:
    with open(expected_file, encoding="utf-8") as stream:
        expected = yaml.safe_load(stream)
    with open(pip_file, encoding="utf-8") as stream:
        python = {re.split(r"[<>=!~;\s\[]", line.strip(), maxsplit=1)[0].lower()
                  for line in stream if line.strip() and not line.startswith("#")}
    with open(bindep_file, encoding="utf-8") as stream:
        depends = Depends(stream.read())
    problems = [f"python: {name} is not among the requirements ({sorted(python)})"
                for name in expected["python"] if name.lower() not in python]
    for family, packages in expected["system"].items():
        selected = sorted(rule[0] for rule in depends.active_rules(PLATFORM_PROFILES[family]))
        print(f"{family}: {' '.join(selected)}")
        if selected != sorted(packages):
            problems.append(f"{family}: bindep selects {selected}, expected {sorted(packages)}")
    print(f"python: {' '.join(sorted(python))}")
    for problem in problems:
        print(f"ERROR: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
