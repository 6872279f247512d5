# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Errors raised by the collection's logic. They know nothing of Ansible; their str() is what
an operator reads in a failed task, and to_dict() is what a module returns alongside it."""

from __future__ import annotations


class CNIError(Exception):
    """Base of every error the collection's logic raises."""

    def to_dict(self) -> dict:
        return {"msg": str(self)}


def error_result(error: Exception) -> dict:
    """What a failed task returns of ``error``: its message as ``msg`` and its structured fields
    under ``error``; an OSError (or any other exception) is reported by its message alone."""
    details = error.to_dict() if isinstance(error, CNIError) else {"msg": str(error)}
    return {"msg": details.pop("msg"), "error": details}


class ReleaseError(CNIError):
    """A source that cannot be used: download failure, checksum mismatch, unsafe tarball, an
    unreadable installer's manifest."""


class ConfigError(CNIError):
    """Bad input: names where it is (an option or a JSON path) and the offending value."""

    _NO_VALUE = object()

    def __init__(self, path: str, message: str, value: object = _NO_VALUE):
        self.path = path
        self.message = message
        self.value = value
        super().__init__(self._render())

    def _render(self) -> str:
        text = f"{self.path}: {self.message}" if self.path else self.message
        if self.value is not self._NO_VALUE:
            text += f" (got {self.value!r})"
        return text

    def to_dict(self) -> dict:
        result = {"msg": str(self), "path": self.path}
        if self.value is not self._NO_VALUE:
            result["value"] = self.value
        return result


class PluginNotFoundError(CNIError):
    """A plugin type that no directory of the plugin search path holds."""

    def __init__(self, plugin_type: str, cni_path: list):
        self.plugin_type = plugin_type
        self.cni_path = list(cni_path)
        super().__init__(f'failed to find plugin "{plugin_type}" in path {self.cni_path}')


class PluginError(CNIError):
    """A plugin that failed: which one, doing what, and everything it said."""

    def __init__(self, plugin: str, verb: str, msg: str, code: int | None = None,
                 details: str = "", stderr: str = "", exit_status: int | None = None):
        self.plugin = plugin
        self.verb = verb
        self.code = code
        self.msg = msg
        self.details = details
        self.stderr = stderr
        self.exit_status = exit_status
        super().__init__(self._render())

    def _render(self) -> str:
        code = f" [code {self.code}]" if self.code is not None else ""
        text = f"plugin {self.plugin} failed ({self.verb}){code}: {self.msg}"
        if self.details:
            text += f"; {self.details}"
        if self.stderr and self.stderr not in text:
            text += f" (stderr: {self.stderr})"
        return text

    def to_dict(self) -> dict:
        return {
            "msg": str(self),
            "plugin": self.plugin,
            "verb": self.verb,
            "code": self.code,
            "details": self.details,
            "stderr": self.stderr,
            "exit_status": self.exit_status,
        }


class OperationError(CNIError):
    """An operation that failed as a whole, possibly after a failed clean-up of its own.

    ``cause`` is the first error; ``cleanup_errors`` are errors of the compensating steps
    (the rollback DEL after a failed ADD), reported beside it, never instead of it."""

    CLEANUP_TEXT = "rollback also failed"
    CLEANUP_KEY = "rollback_errors"

    def __init__(self, message: str, cause: CNIError, cleanup_errors: list | None = None, aftermath: str = ""):
        self.cause = cause
        self.cleanup_errors = list(cleanup_errors or [])
        text = f"{message}: {cause}"
        if self.cleanup_errors and self.CLEANUP_TEXT:
            text += f"; {self.CLEANUP_TEXT}: " + "; ".join(str(e) for e in self.cleanup_errors)
        if aftermath:  # what the failure left, and what comes of it
            text += f"; {aftermath}"
        super().__init__(text)

    def to_dict(self) -> dict:
        # The first error's fields (plugin, verb, code, ...) at the top, with the whole story as msg.
        result = self.cause.to_dict()
        result["msg"] = str(self)
        if self.cleanup_errors:
            result[self.CLEANUP_KEY] = [e.to_dict() for e in self.cleanup_errors]
        return result


class RollbackFailedAlikeError(OperationError):
    """A failed ADD whose rollback DEL failed with the very error the ADD met (the dhcp IPAM
    without its daemon fails both): the error is said once, with that the rollback met it too;
    the DEL's errors are still returned, under ``rollback_errors``."""

    CLEANUP_TEXT = ""

    @staticmethod
    def applies(cause: CNIError, cleanup_errors: list) -> bool:
        """Whether every cleanup error is the plugin error the operation failed with."""
        def said(error) -> tuple | None:
            return (error.plugin, error.msg, error.details) if isinstance(error, PluginError) else None
        return said(cause) is not None and bool(cleanup_errors) and all(said(e) == said(cause) for e in cleanup_errors)


class DeleteError(OperationError):
    """A DEL that failed: ``cause`` is the first plugin's error, ``cleanup_errors`` those of the
    plugins asked after it (DEL is best effort: every plugin is asked)."""

    CLEANUP_TEXT = "other plugins also failed"
    CLEANUP_KEY = "other_errors"
