# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The host's state as validation reads it: the one way a plugin's checks look at /proc, /sys or a
daemon's socket. Each read is kept with its answer, so that a verdict that read the host can be
trusted later exactly while every read still answers the same (``answers_unchanged``)."""

from __future__ import annotations

import os
import socket
import stat

IS_DIR, EXISTS, TEXT, UNIX_SOCKET = "is_dir", "exists", "text", "unix_socket"


def unix_socket_state(path: str) -> list:
    """[present, accepting] of a Unix socket: the file is a socket, and it accepts a connection (a
    socket file left by a daemon that died exists but refuses)."""
    try:
        present = stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        present = False
    accepting = False
    if present:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1.0)
            try:
                probe.connect(path)
                accepting = True
            except OSError:
                pass
    return [present, accepting]


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except (OSError, ValueError):
        return None


_ASK = {IS_DIR: os.path.isdir, EXISTS: os.path.exists, TEXT: _read_text, UNIX_SOCKET: unix_socket_state}


class HostReads:
    """What a validation read of the host, in order: ``answers``, [kind, path, answer] each (JSON)."""

    def __init__(self) -> None:
        self.answers: list = []

    def _ask(self, kind: str, path: str):
        answer = _ASK[kind](path)
        self.answers.append([kind, path, answer])
        return answer

    def is_dir(self, path: str) -> bool:
        return self._ask(IS_DIR, path)

    def exists(self, path: str) -> bool:
        return self._ask(EXISTS, path)

    def text(self, path: str) -> str | None:
        """The file's text, None when it cannot be read."""
        return self._ask(TEXT, path)

    def unix_socket(self, path: str) -> list:
        """[present, accepting], as ``unix_socket_state``."""
        return self._ask(UNIX_SOCKET, path)


def answers_unchanged(answers) -> bool:
    """Whether every read of ``answers`` (``HostReads.answers``, as stored) answers the same now."""
    if not isinstance(answers, list):
        return False
    for read in answers:
        if not (isinstance(read, list) and len(read) == 3 and read[0] in _ASK and isinstance(read[1], str)):
            return False
        if _ASK[read[0]](read[1]) != read[2]:
            return False
    return True
