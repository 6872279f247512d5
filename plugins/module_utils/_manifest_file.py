# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The installer's manifest as a file: where it is, reading and checking it, and which plugin
set it records a binary in. Below the executor, which answers from it which set and release a
binary is; imports nothing of downloads or HTTP, so that every module can afford it. Planning,
staging and writing the manifest are ``_manifest``'s."""

from __future__ import annotations

import json
import os
import re

from ._errors import ReleaseError
from ._fileio import read_if_exists
from ._identifiers import is_plugin_file_name

MANIFEST_NAME = ".cnikit-manifest.json"
MANIFEST_FORMAT = 2
OLD_FORMAT = 1  # one set, the reference release, at the top level: migrated on the next run
REFERENCE_SET = "reference"

SET_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
# A release of the reference plugins, as the manifest records it (without the tag's "v").
RELEASE_VERSION_RE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")


def is_release_version(version) -> bool:
    """Is ``version`` a release of the reference plugins (``1.9.1``), as the reference set records
    it? The reference set may also record a source's content digest (``sha256:<hex>``)."""
    return isinstance(version, str) and bool(RELEASE_VERSION_RE.match(version))


# --- reading ---------------------------------------------------------------------------------

def manifest_path(dest: str) -> str:
    return os.path.join(dest, MANIFEST_NAME)


def read_manifest(dest: str) -> dict | None:
    """The manifest as it is on disk (format 2, or the single-set format 1), checked; see
    ``manifest_sets`` for its sets in either format."""
    data = read_if_exists(manifest_path(dest))
    if data is None:
        return None
    try:
        manifest = json.loads(data)
    except ValueError as exc:
        raise ReleaseError(f"{manifest_path(dest)} is not valid JSON ({exc}); remove it to start over") from exc
    if not isinstance(manifest, dict) or manifest.get("format") not in (OLD_FORMAT, MANIFEST_FORMAT) \
            or (manifest["format"] == MANIFEST_FORMAT and not isinstance(manifest.get("sets"), dict)) \
            or not all(isinstance(entry, dict) and isinstance(entry.get("files"), dict)
                       for entry in _raw_sets(manifest).values()):
        raise ReleaseError(f"{manifest_path(dest)} is not a format {MANIFEST_FORMAT} cnikit manifest; "
                           "remove it to start over")
    owners = {}
    for set_name, entry in _raw_sets(manifest).items():
        if not SET_NAME_RE.match(set_name):
            raise ReleaseError(f"{manifest_path(dest)} has a set name that is not a set name: {set_name!r}")
        for name in entry["files"]:
            if not is_plugin_file_name(name):
                raise ReleaseError(f"{manifest_path(dest)} lists a file name that is not a plugin name: {name!r}")
            if name in owners:
                raise ReleaseError(f"{manifest_path(dest)} lists {name} in two sets, {owners[name]} and {set_name}; "
                                   "remove it to start over")
            owners[name] = set_name
    return manifest


def _raw_sets(manifest: dict) -> dict:
    if manifest["format"] == OLD_FORMAT:
        return {REFERENCE_SET: {key: value for key, value in manifest.items() if key != "format"}}
    return manifest["sets"]


def manifest_sets(manifest: dict | None) -> dict:
    """{set name: {version, source, tarball, plugins, files[, rename]}} of a manifest read by
    ``read_manifest``; a format 1 manifest is the reference set alone."""
    return dict(_raw_sets(manifest)) if manifest else {}


def binary_set(manifest: dict | None, name: str) -> tuple:
    """(set name, set) of the set that installed the binary ``name``; (None, None) if none did."""
    for set_name, entry in manifest_sets(manifest).items():
        if name in entry["files"]:
            return set_name, entry
    return None, None
