# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Executable copies of the Python stand-ins for plugin binaries (fakeplugin.py, flannel_standin.py).

The repository keeps the stand-ins as plain modules, neither executable nor with an interpreter
line: ansible-test's shebang sanity test accepts no ``#!/usr/bin/env python3`` and no executable
file without a shebang, and an entry in tests/sanity/ignore-*.txt would show on Galaxy's import
page. A runtime runs a plugin through execve, so a test that needs a stand-in as a plugin binary
installs a copy that has both."""

from __future__ import annotations

import os
from pathlib import Path

# Debian has python3, not python, on PATH outside a virtualenv; inside one, PATH finds its own.
INTERPRETER_LINE = b"#!/usr/bin/env python3\n"


def program(source: str | os.PathLike) -> bytes:
    """The stand-in ``source`` as a script the kernel can run."""
    return INTERPRETER_LINE + Path(source).read_bytes()


def install(source: str | os.PathLike, dest: str | os.PathLike) -> str:
    """Write ``source`` as an executable plugin at ``dest`` (replaced if present); return its path."""
    Path(dest).write_bytes(program(source))
    os.chmod(dest, 0o755)
    return str(dest)
