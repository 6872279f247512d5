# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The runtime engine: libcni's add/check/delete/gc/status on a network list, in Python.

Where libcni leaves work to its callers this engine does it: a failed ADD is rolled back with a
DEL of the whole list, DEL tolerates a missing or corrupt cache and carries on past a failing
plugin, every plugin call has a timeout, and GC is locked out while an attachment of the same
network is being added or deleted. Before an ADD, the interface name must be free in the
namespace, so that neither the ADD nor its rollback touches an interface someone else made.

Besides the spec's verbs it offers "delete as added" (DEL of a cached attachment with the
configuration, netns and arguments of its ADD), the result cache it keeps (``cache``, a
``_cache.ResultCache``), and which verbs a network's version allows (``available``). Adding a verb
touches this file (its ``VERB_INTRODUCED_IN`` row and its method) and the module that offers it;
see docs/engine.md."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import threading
from dataclasses import InitVar, dataclass, field

from ._cache import CacheEntry, CacheError, ResultCache, attachment_identity, left_by_unfinished_add
from ._conflist import NetworkList, as_libcni_passes, parse_network_list
from ._defaults import DEFAULT_IFNAME, DEFAULT_TIMEOUT
from ._errors import CNIError, ConfigError, DeleteError, OperationError, PluginError, RollbackFailedAlikeError
from ._exec import Executor, PluginExecutor
from ._identifiers import AttachmentKey, canonical_netns, check_container_id, check_ifname, check_network_name, cni_args_string
from ._netns import interface_exists, interface_ipv4_address
from ._plugin_rules.names import WITHHELD_CHECK_TYPES
from ._result import ResultError, convert, family, summarise, supports

# The spec version that brought each verb: a list at an older version cannot run it.
VERB_INTRODUCED_IN = {"ADD": "0.1.0", "DEL": "0.1.0", "CHECK": "0.4.0", "GC": "1.1.0", "STATUS": "1.1.0"}
# DEL carries the cached result as prevResult from the version that brought CHECK.
DEL_PREV_RESULT_INTRODUCED_IN = "0.4.0"
STATUS_CODES = {50: "not ready", 51: "degraded"}

_RULES_IMPORT = threading.Lock()


def plugin_rules():
    """The plugin-rules registry (``_plugin_rules.registry``), imported on first use: a converged
    run never needs it, and its import (every plugin's schema) costs a task tens of milliseconds.
    The engine's verbs run in worker threads, and on Python 3.9 concurrent first imports from a
    zip (Ansible's module payload) race ("cannot import name"): the lock lets one thread import."""
    with _RULES_IMPORT:
        from ._plugin_rules import registry  # pylint: disable=import-outside-toplevel  # see above
    return registry


def _may_withhold_check(plugin: dict) -> bool:
    """Whether a binary this plugin object's CHECK runs (its own, its IPAM's) is of a type whose
    CHECK the rules may withhold (``names.WITHHELD_CHECK_TYPES``); if none is, the rules need not
    be imported to know that it is sent."""
    ipam = plugin.get("ipam")
    binaries = (plugin.get("type"), ipam.get("type") if isinstance(ipam, dict) else None)
    return any(isinstance(binary, str) and binary in WITHHELD_CHECK_TYPES for binary in binaries)


class CheckNotAvailable(CNIError):
    """CHECK cannot run: the list's version predates it, or nothing is attached to check."""


class NotInPlaceError(CNIError):
    """An attachment whose CHECK is withheld is not in place: its interface, or the address its
    ADD gave it, is missing from its namespace."""


@dataclass
class CheckReport:
    """What CHECK did: ``ran`` is False when ``disableCheck`` skipped it; ``tolerated`` maps
    the name of each known plugin defect met to its message; ``withheld`` the name of each
    defect for which a plugin's CHECK was not sent (the attachment was verified without it) to
    what it says."""

    ran: bool
    tolerated: dict = field(default_factory=dict)
    withheld: dict = field(default_factory=dict)


@dataclass
class GCReport:
    """What GC did: ``deleted``, the identities (``CacheEntry.identity``) of the attachments it
    DELeted; ``errors``, each failure as ``CNIError.to_dict`` gives it; ``skipped`` when
    ``disableGC`` kept it from running."""

    deleted: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    skipped: bool = False


@dataclass(frozen=True)
class PluginStatus:
    """One plugin's STATUS: ``state`` is ``ready``, ``not ready`` (code 50), ``degraded`` (51) or
    ``error`` (any other failure); ``plugin`` is None when the list could not be asked at all."""

    plugin: str | None
    ready: bool = True
    state: str = "ready"
    code: int | None = None
    msg: str = ""

    @classmethod
    def failed(cls, plugin: str | None, code: int | None, msg: str) -> PluginStatus:
        return cls(plugin, ready=False, state=STATUS_CODES.get(code, "error"), code=code, msg=msg)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Attachment:
    """One attachment of network ``network``: the runtime parameters of libcni's RuntimeConf,
    complete when made. The constructor checks the names (errors name them as
    ``<option_prefix>container_id`` etc.) and computes, once, what the verbs hand the plugins
    and the cache: ``key`` (an ``AttachmentKey``), ``canonical_netns`` (one spelling per
    namespace), ``cni_args_string`` (CNI_ARGS) and ``libcni_capability_args`` (the capability
    arguments with numbers as libcni passes them). ``cni_args`` is a tuple of (key, value)
    pairs."""

    network: str
    container_id: str
    netns: str
    ifname: str = DEFAULT_IFNAME
    cni_args: tuple = ()
    capability_args: dict = field(default_factory=dict)
    option_prefix: InitVar[str] = ""
    key: AttachmentKey = field(init=False, repr=False, compare=False)
    canonical_netns: str = field(init=False, repr=False, compare=False)
    cni_args_string: str = field(init=False, repr=False, compare=False)
    libcni_capability_args: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self, option_prefix: str) -> None:
        check_network_name(self.network, f"{option_prefix}network")
        check_container_id(self.container_id, f"{option_prefix}container_id")
        check_ifname(self.ifname, f"{option_prefix}ifname")
        pairs = tuple(tuple(pair) for pair in self.cni_args)
        derived = {"cni_args": pairs, "key": AttachmentKey(self.network, self.container_id, self.ifname),
                   "canonical_netns": canonical_netns(self.netns), "cni_args_string": cni_args_string(pairs),
                   "libcni_capability_args": as_libcni_passes(self.capability_args)}
        for name, value in derived.items():
            object.__setattr__(self, name, value)  # frozen: set once, here

    @classmethod
    def from_cache(cls, entry: CacheEntry, netns: str = "") -> Attachment:
        """The attachment as its ADD made it; ``netns`` stands in where the entry names none."""
        return cls(entry.network, entry.container_id, entry.effective_netns or netns, entry.ifname, entry.cni_args,
                   entry.capability_args)

    def identity(self) -> dict:
        """The attachment as the modules return it (``_cache.attachment_identity``)."""
        return attachment_identity(self.network, self.container_id, self.ifname, self.netns)

    def with_requested_ips(self, requested_ips: list | None) -> Attachment:
        """The attachment as the plugins see it when addresses are requested: CNI_ARGS ``IP``, with
        ``IgnoreUnknown`` so that the plugins that do not read ``IP`` accept it."""
        if not requested_ips:
            return self
        args = [pair for pair in self.cni_args if pair[0] not in ("IP", "IgnoreUnknown")]
        args += [("IgnoreUnknown", "1"), ("IP", ",".join(requested_ips))]
        # option_prefix named: Python 3.9's replace() refuses to leave out an InitVar, even one with a default
        return dataclasses.replace(self, cni_args=tuple(args), option_prefix="")


class InterfaceInUseError(CNIError):
    """The interface an ADD would create already exists in the target namespace."""


class Engine:
    """Runs network lists against plugin binaries found along ``cni_path``, keeping libcni's
    result cache in ``cache_dir`` (``cache``, which callers read). ``executor`` stands in for
    the plugin runner built from ``cni_path`` and ``timeout`` (tests hand it a fake)."""

    def __init__(self, cni_path: list, cache_dir: str, timeout: float = DEFAULT_TIMEOUT,
                 executor: Executor | None = None):
        self.executor = executor or PluginExecutor(cni_path, timeout)
        self.cache = ResultCache(cache_dir)

    # -- versions --------------------------------------------------------------------------

    def available(self, network: NetworkList, verb: str) -> bool:
        """Whether ``network``, at the version it runs at, has ``verb`` (a key of
        ``VERB_INTRODUCED_IN``). ``disableCheck`` and ``disableGC`` are the list's own choice, not
        availability."""
        return supports(self.version_of(network), VERB_INTRODUCED_IN[verb])

    def version_of(self, network: NetworkList) -> str:
        """The version to run at; with ``cniVersions``, one every plugin binary supports (by its
        VERSION answer, which the executor memoises).

        A plugin that cannot be probed (missing, broken) only forgoes the narrowing: the verb
        then fails at that plugin, after DEL has asked every other one."""
        if not network.cni_versions:
            return network.version()
        try:
            return network.version([self.executor.supported_versions(p["type"]) for p in network.plugins])
        except CNIError:
            return network.version()

    def _call(self, network: NetworkList, plugin: dict, verb: str, version: str,
              attachment: Attachment | None = None, prev_result: dict | None = None, extra: dict | None = None) -> bytes:
        stdin = build_request(network, plugin, version, prev_result, attachment, extra)
        if attachment is None:
            return self.executor.call(plugin["type"], verb, stdin)
        return self.executor.call(plugin["type"], verb, stdin, attachment.container_id, attachment.netns,
                                  attachment.ifname, attachment.cni_args_string)

    # -- ADD -------------------------------------------------------------------------------

    def add(self, network: NetworkList, attachment: Attachment, requested_ips: list | None = None) -> dict:
        """ADD every plugin in order; cache and return the final result (at the list's version).

        Refused, before anything runs, when ``attachment.ifname`` already exists in the
        namespace. On failure the whole list is DELeted in reverse, nothing is cached, and the
        error says which plugin failed (and what the rollback could not undo). An ADD
        interrupted earlier (its intent marker is still there) is DELeted before this one starts.
        ``requested_ips`` asks the IPAM for these addresses (CNI_ARGS ``IP``, which an IPAM that
        honours requested addresses reads); the cache records the attachment's own arguments."""
        key = _key_in(network, attachment)
        version = self.version_of(network)
        as_sent = attachment.with_requested_ips(requested_ips)
        with self.cache.lock(key), self.cache.lock_interface(attachment.canonical_netns, attachment.ifname):
            if self.cache.is_pending(key):
                errors = self._delete_plugins(network, version, attachment, None)
                if errors:
                    raise OperationError(f"cannot clean up an interrupted ADD of network {network.name}",
                                         errors[0], errors[1:])
            refuse_taken_ifname(self.cache, network, attachment)
            self.cache.mark_pending(key)
            result = None
            try:
                for plugin in network.plugins:
                    result = self._parse_result(plugin, self._call(network, plugin, "ADD", version, as_sent, result), version)
                final = convert(result, version)  # a result the list's version cannot hold fails the ADD
                self.cache.write(CacheEntry(
                    network.name, attachment.container_id, attachment.ifname, config=network.raw_bytes,
                    netns=attachment.netns, cni_args=attachment.cni_args,
                    capability_args=attachment.capability_args, result=result, managed=True))
            except (CNIError, OSError) as exc:
                cause = exc if isinstance(exc, CNIError) else CNIError(f"cannot write the result cache: {exc}")
                rollback_errors = self._delete_plugins(network, version, as_sent, result)
                if not rollback_errors:
                    self.cache.clear_pending(key)
                    raise OperationError(f"ADD of network {network.name} failed and was rolled back", cause) from exc
                raise self._rollback_failed(network, key, cause, rollback_errors) from exc
            self.cache.clear_pending(key)
        return final

    def _rollback_failed(self, network: NetworkList, key: AttachmentKey, cause: CNIError,
                         rollback_errors: list) -> OperationError:
        """The error of an ADD whose rollback failed: what the plugins made may be left, and the
        intent marker, which stays, makes the next ADD or DEL of the attachment DEL it first."""
        left = left_by_unfinished_add(self.cache.pending_marker(key))
        if RollbackFailedAlikeError.applies(cause, rollback_errors):
            return RollbackFailedAlikeError(f"ADD of network {network.name} failed, and its rollback (DEL) failed "
                                            "the same way", cause, rollback_errors, left)
        return OperationError(f"ADD of network {network.name} failed", cause, rollback_errors, left)

    @staticmethod
    def _parse_result(plugin: dict, stdout: bytes, version: str) -> dict:
        try:
            result = json.loads(stdout) if stdout.strip() else None
        except ValueError:
            result = None
        if not isinstance(result, dict):
            raise PluginError(plugin["type"], "ADD", f"succeeded but printed no JSON result: {stdout[:500]!r}")
        if not result.get("cniVersion"):
            result["cniVersion"] = version  # libcni assumes the config's version (fixupResultVersion)
        try:
            family(result["cniVersion"])
        except ResultError as exc:
            raise PluginError(plugin["type"], "ADD", f"returned a result of an unknown version: {exc}") from None
        return result

    # -- DEL -------------------------------------------------------------------------------

    def delete(self, network: NetworkList, attachment: Attachment) -> bool:
        """DEL every plugin in reverse with the cached result as prevResult.

        Idempotent; runs even without a usable cache entry. Every plugin is asked, even after
        one fails (DEL is best effort), and the cache entry is kept for a retry if any failed.
        Returns whether a cache entry (usable or not) existed."""
        version = self.version_of(network)
        with self.cache.lock(_key_in(network, attachment)):
            return self._delete_unlocked(network, version, attachment)

    def delete_as_added(self, entry: CacheEntry, netns: str = "") -> bool:
        """DEL the attachment of a cache entry with what its ADD used: the cached configuration,
        netns (``netns`` stands in where the entry names none) and arguments. As :meth:`delete`."""
        with self.cache.lock(entry.key):
            return self._delete_as_added_unlocked(entry, netns)

    def _delete_as_added_unlocked(self, entry: CacheEntry, netns: str = "") -> bool:
        network = network_at_add(entry)
        return self._delete_unlocked(network, self.version_of(network), Attachment.from_cache(entry, netns))

    def _delete_unlocked(self, network: NetworkList, version: str, attachment: Attachment) -> bool:
        key = _key_in(network, attachment)
        cached_result, existed = self._tolerant_cached_result(key)
        errors = self._delete_plugins(network, version, attachment, cached_result)
        if errors:
            raise DeleteError(f"DEL of network {network.name} failed (the cache entry is kept for a retry)",
                              errors[0], errors[1:])
        self.cache.delete(key)
        self.cache.clear_pending(key)
        return existed

    def _tolerant_cached_result(self, key: AttachmentKey) -> tuple:
        try:
            entry = self.cache.read(key)
        except CacheError:
            return None, True
        return (entry.result if entry else None), entry is not None

    def _delete_plugins(self, network: NetworkList, version: str, attachment: Attachment,
                        prev_result: dict | None) -> list:
        """DEL each plugin in reverse order; return the errors instead of stopping at one."""
        if prev_result is not None and not supports(version, DEL_PREV_RESULT_INTRODUCED_IN):
            prev_result = None  # before 0.4.0 DEL carries no prevResult
        if prev_result is not None:
            try:
                convert(prev_result, version)
            except ResultError:
                prev_result = None  # an unconvertible cached result must not block DEL
        errors = []
        for plugin in reversed(network.plugins):
            try:
                self._call(network, plugin, "DEL", version, attachment, prev_result)
            except CNIError as exc:
                errors.append(exc)
        return errors

    # -- CHECK -----------------------------------------------------------------------------

    def check(self, network: NetworkList, attachment: Attachment) -> CheckReport:
        """CHECK every plugin, in order, with the cached result; raise at the first failure."""
        key = _key_in(network, attachment)
        version = self.version_of(network)
        if not supports(version, VERB_INTRODUCED_IN["CHECK"]):
            raise CheckNotAvailable(f"CHECK is not available for network {network.name} at cniVersion {version} "
                                    f"(it needs {VERB_INTRODUCED_IN['CHECK']} or later)")
        if network.disable_check:
            return CheckReport(ran=False)
        report = CheckReport(ran=True)
        with self.cache.lock(key):
            entry = self.cache.read(key)
            if entry is None or entry.result is None:
                raise CheckNotAvailable(f"nothing to CHECK: no cached result for {attachment.container_id}/"
                                        f"{attachment.ifname} on network {network.name}")
            for plugin in network.plugins:
                withheld = self._withheld_check(plugin)
                if withheld:
                    if not report.withheld:
                        verify_in_place(attachment, entry.result)
                    report.withheld.update(withheld)
                    continue
                self._check_one_plugin(network, plugin, version, attachment, entry.result, report)
        return report

    def _withheld_check(self, plugin: dict) -> dict:
        """{defect name: what to say} of the defects for which this plugin's CHECK must not be
        sent: a binary it runs (itself, its IPAM) may be a release that has one. A binary that
        cannot be found or probed is not judged: CHECK then fails at it, naming it."""
        withheld = {}
        if not _may_withhold_check(plugin):
            return withheld  # the rules' answer, without importing them
        with _RULES_IMPORT:  # as plugin_rules: a first import in a worker thread
            from ._plugin_rules._common import binary_releases  # pylint: disable=import-outside-toplevel  # see above
        for binary, defect in plugin_rules().withheld_checks(plugin):
            try:
                releases = binary_releases(self.executor.release(binary), self.executor.supported_versions(binary))
            except CNIError:
                continue
            if defect.may_affect(releases):
                withheld[defect.name] = (
                    f"CHECK is not sent to {plugin['type']} with {binary} here ({defect.explanation}; the installed "
                    f"{binary} is {releases.label}): the interface and the address its ADD gave were verified "
                    f"instead; plugins v{defect.fixed_in} and later can be CHECKed")
        return withheld

    def _check_one_plugin(self, network: NetworkList, plugin: dict, version: str, attachment: Attachment,
                          prev_result: dict, report: CheckReport) -> None:
        """CHECK ``plugin``, tolerating (into ``report``) a failure that is a known defect of it."""
        try:
            self._call(network, plugin, "CHECK", version, attachment, prev_result)
            return
        except PluginError as exc:
            error = exc
        for defect in plugin_rules().check_defects(plugin["type"]):
            match = defect.match(error.msg)
            if match is None:
                continue
            if defect.refresh is not None:
                refreshed = defect.refresh(match, prev_result)
                if refreshed is None:
                    raise error
                self._call(network, plugin, "CHECK", version, attachment, refreshed)
            report.tolerated[defect.name] = f"ignored a CHECK failure of {error.plugin}: {error.msg} ({defect.explanation})"
            return
        raise error

    # -- GC and STATUS ---------------------------------------------------------------------

    def gc(self, network: NetworkList | str, valid_attachments: list, keep=None) -> GCReport:
        """DEL every cached attachment of ``network`` not in ``valid_attachments`` (pairs of
        container ID and ifname), then send GC to each plugin (1.1.0 and later).

        ``network`` may be only the name of a network that no configuration declares any more,
        known from its cache entries: each attachment is then DELeted with the configuration
        cached at its ADD, and no GC is sent (there is no current list to send it to).

        ``keep``, a predicate on cache entries, adds the entries it accepts to the valid set;
        it is evaluated under the GC lock, so an attachment added meanwhile is judged too.
        Errors are collected, not raised at the first: the report lists what was deleted and
        every error. Nothing happens when ``disableGC`` is set. The cache is tidied after."""
        declared = isinstance(network, NetworkList)
        network_name = network.name if declared else network
        check_network_name(network_name, "network")
        if declared and network.disable_gc:
            return GCReport(skipped=True)
        report = GCReport()
        if not declared:
            with self.cache.lock_for_gc(network_name):
                self._delete_stale(network_name, valid_attachments, keep, report, self._delete_as_added_unlocked)
            self.cache.tidy()
            return report
        version = self.version_of(network)
        with self.cache.lock_for_gc(network_name):
            valid = self._delete_stale(network_name, valid_attachments, keep, report,
                                       lambda entry: self._delete_unlocked(network, version, Attachment.from_cache(entry)))
            if supports(version, VERB_INTRODUCED_IN["GC"]):
                for plugin in network.plugins:
                    try:
                        self._call(network, plugin, "GC", version,
                                   extra={"cni.dev/valid-attachments": valid, "cni.dev/attachments": valid})
                    except CNIError as exc:
                        report.errors.append(exc.to_dict())
        self.cache.tidy()
        return report

    def _delete_stale(self, network_name: str, valid_attachments: list, keep, report: GCReport, delete) -> list:
        """Under the network's GC lock: DEL every cached attachment neither in
        ``valid_attachments`` nor accepted by ``keep`` with ``delete(entry)``, into ``report``.
        Returns the valid set as GC sends it."""
        entries, problems = self.cache.entries(network_name)
        kept = [(e.container_id, e.ifname) for e in entries if keep is not None and keep(e)]
        # A file nobody can read may be a live container's (a runtime crashed writing it): valid.
        unreadable = [pair for problem in problems for pair in problem.keys(network_name)]
        valid_keys = dict.fromkeys(list(valid_attachments) + kept + unreadable)  # ordered, once each
        valid = [{"containerID": cid, "ifname": ifname} for cid, ifname in valid_keys]
        for entry in entries:
            if (entry.container_id, entry.ifname) in valid_keys:
                continue
            try:
                delete(entry)
                report.deleted.append(entry.identity())
            except CNIError as exc:
                report.errors.append(exc.to_dict())
        return valid

    def status(self, network: NetworkList) -> list | None:
        """Each plugin's STATUS (a ``PluginStatus``, 1.1.0 and later): ready, or the code and
        message it gave; None where the list's version predates STATUS."""
        if not self.available(network, "STATUS"):
            return None
        version = self.version_of(network)
        statuses = []
        for plugin in network.plugins:
            try:
                self._call(network, plugin, "STATUS", version)
            except PluginError as exc:
                statuses.append(PluginStatus.failed(plugin["type"], exc.code, exc.msg))
                continue
            statuses.append(PluginStatus(plugin["type"]))
        return statuses


def build_request(network: NetworkList, plugin: dict, version: str, prev_result: dict | None = None,
                  attachment: Attachment | None = None, extra: dict | None = None) -> bytes:
    """A plugin's stdin: its object plus name, cniVersion, prevResult (converted to the
    list's version) and runtimeConfig (the enabled capabilities the caller supplied)."""
    request = dict(plugin)
    request["name"] = network.name
    request["cniVersion"] = version
    if prev_result is not None:
        request["prevResult"] = convert(prev_result, version)
    if attachment is not None:
        enabled = plugin.get("capabilities") or {}
        runtime = {cap: value for cap, value in attachment.libcni_capability_args.items() if enabled.get(cap) is True}
        if runtime:
            request["runtimeConfig"] = runtime
    request.update(extra or {})
    # Sorted keys, as libcni's map round-trip sends them.
    return json.dumps(request, sort_keys=True).encode()


def refuse_taken_ifname(cache: ResultCache, network: NetworkList, attachment: Attachment) -> None:
    """InterfaceInUseError when ``attachment.ifname`` already exists in the namespace, unless
    the list configures an existing interface (as on the ``lo`` every namespace has) rather
    than creating one: the rules registry says which. The error names the attachments ``cache``
    holds there. ADD asks it, and check mode, predicting an ADD."""
    if not interface_exists(attachment.netns, attachment.ifname):
        return
    if plugin_rules().configures_existing_interface(network.plugins):
        return
    entries, _problems = cache.entries()
    owners = [f"network {e.network} (container ID {e.container_id})" for e in entries
              if e.ifname == attachment.ifname and canonical_netns(e.effective_netns) == attachment.canonical_netns]
    owner = f"it belongs to {', '.join(owners)}" if owners else "no cached attachment names it"
    raise InterfaceInUseError(
        f"cannot attach network {network.name}: interface {attachment.ifname} already exists in network "
        f"namespace {attachment.netns} ({owner}); nothing was changed. Choose another ifname, or detach "
        "what holds it first")


def network_at_add(entry: CacheEntry) -> NetworkList:
    """The network list as it was at ADD, from the entry's cached config bytes."""
    return parse_network_list(entry.config, source=entry.path)


def _key_in(network: NetworkList, attachment: Attachment) -> AttachmentKey:
    """The attachment's key, which must be of the list the verb runs: the cache entry is written
    under the key, the requests carry the list's name."""
    if attachment.network != network.name:
        raise ConfigError("network", f"the attachment is of network {attachment.network}, the verb runs network "
                          f"{network.name}", network.name)
    return attachment.key


def verify_in_place(attachment: Attachment, result: dict) -> None:
    """What can be verified of an attachment without CHECK: its interface is in its namespace and
    carries the IPv4 address its ADD gave it (the primary one: an IPAM that hands out one IPv4
    address, as dhcp does, puts it first). NotInPlaceError when not."""
    where = f"network namespace {attachment.netns}"
    if not interface_exists(attachment.netns, attachment.ifname):
        raise NotInPlaceError(f"interface {attachment.ifname} is missing from {where}")
    expected = [address for address in map(_interface_or_none, summarise(result)["ips"])
                if address is not None and address.version == 4]
    if not expected:
        return
    actual = interface_ipv4_address(attachment.netns, attachment.ifname)
    if actual not in expected:
        raise NotInPlaceError(f"interface {attachment.ifname} in {where} does not carry "
                              f"{', '.join(map(str, expected))}, the address its ADD gave it "
                              f"(it has {actual or 'no IPv4 address'})")


def _interface_or_none(address):
    try:
        return ipaddress.ip_interface(address)
    except ValueError:
        return None  # a damaged cache entry's: nothing to compare
