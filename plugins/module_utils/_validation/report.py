# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The findings of a validation: each names a JSON path, says what is wrong and carries the
offending value."""

from __future__ import annotations

from dataclasses import dataclass, field

from .._errors import ConfigError


NO_VALUE = object()


@dataclass
class Finding:
    """One problem: where (JSON path), what, and the offending value. ``of_host``: the host gave
    it (its plugin binaries and their releases, its other files, its kernel and daemons), not the
    configuration alone, so it may change while the configuration does not."""

    path: str
    message: str
    value: object = NO_VALUE
    of_host: bool = False

    def to_dict(self) -> dict:
        result = {"path": self.path, "message": self.message}
        if self.value is not NO_VALUE:
            result["value"] = self.value
        return result

    def __str__(self) -> str:
        value = () if self.value is NO_VALUE else (self.value,)
        return str(ConfigError(self.path, self.message, *value))


@dataclass
class ValidationReport:
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def error(self, path: str, message: str, value: object = NO_VALUE, *, of_host: bool = False) -> None:
        self.errors.append(Finding(path, message, value, of_host))

    def warn(self, path: str, message: str, value: object = NO_VALUE, *, of_host: bool = False) -> None:
        self.warnings.append(Finding(path, message, value, of_host))

    def to_dict(self) -> dict:
        return {"errors": [f.to_dict() for f in self.errors], "warnings": [f.to_dict() for f in self.warnings]}

    def summary(self) -> str:
        return "; ".join(str(f) for f in self.errors)
