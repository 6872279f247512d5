"""Print the pip version that the installed ansible-test bootstraps into its virtualenvs."""

import pathlib
import re
import sys

import ansible_test

SOURCE = pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
match = re.search(r"pip='([0-9.]+)'", SOURCE.read_text(encoding="utf-8"))
if not match:
    sys.exit(f"cannot find the pinned pip version in {SOURCE}")
print(match.group(1))
