# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_network's task: a network's conflist built, validated and written (present), or every
file that declares the network removed (absent). The file's parts are ``_network_file``'s; its
attributes and backups are Ansible's, reached through the module's ``ModuleHost``."""

from __future__ import annotations

from . import _network_file as netfile
from ._argspec import ArgumentSpec
from ._conflist import ENVELOPE_OPTIONS, needed_binaries, read_conf_file
from ._errors import CNIError, ConfigError
from ._exec import PluginExecutor
from ._fileio import ensure_dir, remove_written_file
from ._identifiers import check_network_name
from ._planned import planned_fact
from ._validation.report import ValidationReport
from ._verdicts import VerdictCache, forget as forget_verdict
from ._wording import first_few

ARGUMENT_SPEC = ArgumentSpec({
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "plugins": {"type": "list", "elements": "dict"},
    "config": {"type": "raw"},
    "cni_version": {"type": "str"},
    "cni_versions": {"type": "list", "elements": "str"},
    "disable_check": {"type": "bool"},
    "disable_gc": {"type": "bool"},
    "load_only_inlined_plugins": {"type": "bool"},
    "priority": {"type": "int", "default": netfile.DEFAULT_PRIORITY},
    "filename": {"type": "str"},
    "mode": {"type": "raw", "default": "0644"},
    "owner": {"type": "str"},
    "group": {"type": "str"},
    "validate": {"type": "str", "choices": ["strict", "warn", "none"], "default": "strict"},
    "check_plugins": {"type": "bool", "default": True},
    "validate_only": {"type": "bool", "default": False},
    "backup": {"type": "bool", "default": False},
}, mutually_exclusive=(("plugins", "config"),), required_if=(("state", "present", ("plugins", "config"), True),),
    add_file_common_args=True)


def run(host, params: dict, result: dict) -> None:
    """``host`` is the module's ``_ansible_glue.ModuleHost``."""
    if params["state"] == "present" and params["validate"] != "none":
        params = _requiring_jsonschema(host, params)
    result.update({"changed": False, "path": None, "validation_errors": [], "validation_warnings": []})
    check_network_name(params["name"], "name")
    path = netfile.conflist_path(params["conf_dir"], params["name"], params["priority"], params["filename"])
    result["path"] = path
    if params["state"] == "present":
        present(host, params, path, result)
    else:
        absent(host, params, path, result)


def _requiring_jsonschema(host, params: dict) -> dict:
    """Validation needs jsonschema: a real run without it fails. Check mode on a host the plugins
    role has not prepared yet (its check run installs nothing) predicts the file unvalidated
    instead, with a warning, rather than the whole prediction failing."""
    if not host.check_mode or not host.missing_libraries("jsonschema"):
        host.require_libraries("jsonschema")
        return params
    host.warn(f"network {params['name']}: jsonschema is not installed for the Python running the module, so check "
              "mode predicts the file without validating it; a real run validates it once jsonschema is there "
              "(the cnikit.cni.plugins role installs it)")
    return dict(params, validate="none")


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", "replace")


def _existing(path: str) -> bytes | None:
    """The bytes of the network's file, None when there is none. A FIFO, a device or an
    oversized file there fails the task naming it (read_conf_file): never a hang, and nothing is
    written over what could not be read."""
    try:
        return read_conf_file(path)
    except FileNotFoundError:
        return None


def _diff_text(path: str) -> str:
    try:
        return _text(_existing(path))
    except ConfigError as exc:
        return f"({exc.message})"


def present(host, params, path: str, result: dict) -> None:
    envelope = {option: params[option] for option in ENVELOPE_OPTIONS}
    conf, report, converted = netfile.build_conflist(params["name"], params["plugins"], params["config"], **envelope)
    result["converted_from_conf"] = converted
    if converted:
        host.warn(f"network {params['name']}: config is a single-plugin network (a .conf): it is written as the "
                  "one-plugin list libcni loads it as (the list takes its name and cniVersion, its plugin is the "
                  "whole .conf); give config as a list with plugins to silence this")
    if params["validate"] != "none":
        conf = _validated(host, params, path, conf, report)
    else:
        conf = _coerced(conf)
    data, result["config"] = netfile.normalise(conf)
    existing = _existing(path)
    unchanged = netfile.same_content(existing, result["config"])
    if params["validate"] != "none" and not unchanged:
        _refuse_what_every_add_would_refuse(conf, report)
    kept = unchanged and not params["validate_only"]
    _report(host, report, params["name"], params["validate"], not params["validate_only"], result, kept)
    if params["validate_only"]:
        return
    _write(host, params, path, data, existing, unchanged, result)


def _coerced(conf: dict) -> dict:
    """Spelt numbers and booleans as the plugins' schemas want them (``_validation.coerce``)."""
    from ._validation.coerce import coerce_scalars  # pylint: disable=import-outside-toplevel  # loads every plugin's rules
    return coerce_scalars(conf)


def _validated(host, params, path: str, declared: dict, report: ValidationReport) -> dict:
    """The ``declared`` configuration coerced and validated on the host, its findings added to
    ``report``: the verdict remembered from the last validation of the file when it provably holds
    (``_verdicts``), else a validation, remembered for the next run (not in check mode nor with
    ``validate_only``, which change nothing on the host)."""
    executor = _probing_executor(host, params, declared)
    verdicts = VerdictCache(params["cache_dir"], params["conf_dir"], path, declared, executor, "cni_network")

    def validate(asked, host_reads) -> dict:
        conf = _coerced(declared)
        netfile.validate_on_host(conf, path, params["conf_dir"], report, asked, host_reads)
        return conf
    return verdicts.validated(report, validate, keep=not host.check_mode and not params["validate_only"])


def _refuse_what_every_add_would_refuse(conf: dict, report) -> None:
    """A changed network every ADD of which the host would refuse as it is now (a gateway bridge
    still holding the old subnet's address, without forceAddress): an error before the file is
    written, so that a change cni_attach will refuse does not leave the file changed under the
    host's attachments."""
    from ._plugin_rules.registry import add_blocker_findings  # pylint: disable=import-outside-toplevel  # a changed network only
    for where, plugin_type, reason in add_blocker_findings(conf.get("plugins") or []):
        report.error(where, f"({plugin_type}) {reason}: every ADD of the changed network would fail on this host")


def _write(host, params, path: str, data: bytes, existing: bytes | None, unchanged: bool, result: dict) -> None:
    """Write the file (``existing``: its bytes now) unless its meaning is ``unchanged``, then bring
    its attributes (mode, owner, group, SELinux context, chattr attributes) to what the task says,
    through Ansible's helpers."""
    mode = netfile.parse_mode(params["mode"])
    if netfile.mode_warning(mode):
        host.warn(netfile.mode_warning(mode))
    uid, gid = netfile.resolve_id(params["owner"], "owner"), netfile.resolve_id(params["group"], "group")
    rewrite = not unchanged
    if host.check_mode and rewrite:
        result["ansible_facts"] = planned_fact(params["name"], params["conf_dir"], result["config"])
    attribute_diff = {"before_header": f"{path} (attributes)", "after_header": f"{path} (attributes)"}
    if rewrite and not host.check_mode:
        if existing is not None:
            # The write itself brings mode and owner; what it changes is known only before it.
            attribute_diff.update(netfile.ownership_changes(path, mode, uid, gid))
            if params["backup"]:
                result["backup_file"] = host.backup(path)
        ensure_dir(params["conf_dir"], 0o755)
        netfile.write_file(path, data, mode, uid, gid, params["unsafe_writes"])
    # In check mode this only predicts; Ansible adds what it changes to attribute_diff.
    retouched = host.set_file_attributes(path, mode, uid, gid, attribute_diff)
    result["changed"] = rewrite or retouched
    diffs = []
    if rewrite:
        after_header = f"{path} (converted from a single-plugin .conf)" if result["converted_from_conf"] else path
        diffs.append({"before_header": path, "before": _text(existing), "after_header": after_header,
                      "after": _text(data)})
    if "before" in attribute_diff:
        diffs.append(attribute_diff)
    if host.diff and diffs:
        result["diff"] = diffs[0] if len(diffs) == 1 else diffs


def _probing_executor(host, params, conf: dict) -> PluginExecutor | None:
    """What checks the list's plugin binaries, or None not to check them. In check mode,
    binaries not installed yet are what an earlier task of the same run would install (it
    predicted, not installed, them): their check becomes a warning, not a failure."""
    if not params["check_plugins"]:
        return None
    executor = PluginExecutor(params["cni_path"], params["timeout"], host.run_command)
    if host.check_mode:
        missing = _missing_plugins(conf, executor)
        if missing:
            host.warn(f"network {params['name']}: check mode: plugins {', '.join(missing)} are not in "
                      f"{params['cni_path']}; the binaries are not checked (a real run fails unless they are installed first)")
            return None
    return executor


def _missing_plugins(conf: dict, executor: PluginExecutor) -> list:
    missing = []
    for plugin_type in needed_binaries(conf.get("plugins")):
        try:
            executor.find(plugin_type)
        except CNIError:
            missing.append(plugin_type)
    return missing


def absent(host, params, path: str, result: dict) -> None:
    removed = netfile.files_declaring(params["conf_dir"], params["name"], path)
    result["removed"] = removed
    result["changed"] = bool(removed)
    if removed:
        _warn_of_attachments_left(host, params["name"], params["cache_dir"])
    if host.diff:
        result["diff"] = [{"before_header": p, "before": _diff_text(p), "after_header": p, "after": ""}
                          for p in removed]
    if host.check_mode:
        return
    for removed_path in removed:
        if params["backup"]:
            result.setdefault("backup_files", []).append(host.backup(removed_path))
        remove_written_file(removed_path)
        forget_verdict(params["cache_dir"], removed_path)


def _warn_of_attachments_left(host, name: str, cache_dir: str) -> None:
    """The network's attachments whose namespaces are there (or may be), of any runtime: they
    keep their interfaces and addresses, but nothing can ADD, CHECK or repair them without the
    file, and a runtime that DELs by the configuration it reads now cannot detach them either."""
    from ._cache import ResultCache  # pylint: disable=import-outside-toplevel  # removing a network only
    from ._netns import is_live  # pylint: disable=import-outside-toplevel  # as ResultCache
    entries, _problems = ResultCache(cache_dir).entries(name)
    live = [e for e in entries if is_live(e.effective_netns) is not False]
    if not live:
        return
    shown = first_few([f"container ID {e.container_id}, {e.ifname} in {e.effective_netns or 'an unnamed namespace'}"
                       f"{'' if e.managed else ' (another runtime)'}" for e in live])
    host.warn(f"network {name}: {len(live)} attachment{'s' if len(live) > 1 else ''} made with it "
              f"{'are' if len(live) > 1 else 'is'} still attached ({shown}): removing its file takes nothing from "
              "them, but they can no longer be checked or repaired, and runtimes that detach by the configuration "
              f"they find cannot detach them. Detach them first (cni_attach state=absent, which works from the cache "
              f"in {cache_dir}), or with the runtime that made them; cni_gc collects this collection's once their "
              "namespaces are gone")


def _report(host, report: ValidationReport, name: str, mode: str, writing: bool, result: dict, kept: bool) -> None:
    """Fail or warn with the findings. ``kept``: the task leaves the file as it is, so the
    warnings of the configuration alone were given when it was written: they are listed in
    ``validation_warnings`` without being repeated on every converged run (what the host says,
    its binaries and other files, ``of_host``, is warned of on every run)."""
    result["validation_errors"] = [f.to_dict() for f in report.errors]
    result["validation_warnings"] = [f.to_dict() for f in report.warnings]
    for finding in report.warnings:
        if finding.of_host or not kept:
            host.warn(f"network {name}: {finding}")
    if report.errors and mode == "strict":
        host.fail(f"the network configuration is not valid: {report.summary()}", **result)
    consequence = "written anyway" if writing else "reported only"
    for finding in report.errors:
        host.warn(f"network {name}: invalid, {consequence} (validate={mode}): {finding}")
