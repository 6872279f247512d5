# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the differential suite and write its figures into docs/validation.md, between the
``differential:begin <release>`` and ``differential:end <release>`` markers of the plugin release
it ran against (tests/utils/releases.py: CNIKIT_TEST_PLUGIN_RELEASE, Debian 12's by default).

Usage (as root, from the repository root):
    [CNIKIT_TEST_PLUGIN_RELEASE=1.9.1] PYTHONPATH=.build/inplace python tests/differential/report.py [--check]
``--check`` prints the section instead of writing it."""

from __future__ import annotations

import argparse
import collections
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import expected  # noqa: E402  pylint: disable=wrong-import-position
import harness  # noqa: E402  pylint: disable=wrong-import-position

DOC = Path(__file__).parents[2] / "docs" / "validation.md"
RELEASE = harness.releases.PLUGIN_RELEASE
BEGIN, END = f"<!-- differential:begin {RELEASE} -->", f"<!-- differential:end {RELEASE} -->"
COLUMNS = ("agree", "false error", "miss", "environment")


def run(cases: list, missing: set) -> list:
    return [harness.run_case(plugin, case_id, conf, missing) for plugin, case_id, conf in cases]


def table(outcomes: list) -> list:
    by_plugin = collections.defaultdict(collections.Counter)
    for outcome in outcomes:
        by_plugin[outcome.plugin][outcome.verdict] += 1
    total = collections.Counter()
    lines = ["| Plugin | Cases | Agree | False errors | Misses | Environment |", "|---|---|---|---|---|---|"]
    for plugin in sorted(by_plugin):
        counts = by_plugin[plugin]
        total.update(counts)
        lines.append(f"| {plugin} | {sum(counts.values())} | " + " | ".join(str(counts[c]) for c in COLUMNS) + " |")
    lines.append(f"| **all** | **{sum(total.values())}** | " + " | ".join(f"**{total[c]}**" for c in COLUMNS) + " |")
    return lines


def section(corpus: list, mutations: list, missing: set, seconds: float) -> str:
    lines = [BEGIN, "",
             f"Last run: {time.strftime('%Y-%m-%d', time.gmtime())}, kernel {platform.release()}, Debian's plugins "
             f"{RELEASE} in {_in_checkout(harness.PLUGIN_DIR)}, {seconds:.0f} s for {len(corpus) + len(mutations)} cases. "
             "Kernel modules "
             f"missing on that host: {', '.join(sorted(missing)) or 'none'}.", "",
             f"**Real-world corpus** ({len(corpus)} files, `tests/differential/corpus/`, sources in `SOURCES.json`):", ""]
    lines += table(corpus)
    lines += ["", f"**Mutations** ({len(mutations)} cases, `tests/differential/mutations.py`):", ""]
    lines += table(mutations)
    disagreements = [o for o in corpus + mutations if o.verdict in ("false error", "miss")]
    lines += ["", "Disagreements, each accepted with its reason:", ""]
    if not disagreements:
        lines.append("None.")
    for outcome in disagreements:
        key = f"{outcome.plugin}: {outcome.case_id}"
        reason = expected.ACCEPTED_DISAGREEMENTS.get(key, expected.KNOWN_DEFECTS.get(key, ("", "NOT ACCEPTED")))[1]
        lines.append(f"- {outcome.verdict}, {outcome.plugin}: {outcome.case_id}. {reason}")
    lines += ["", "Environment failures (not counted as agreement or disagreement):", ""]
    for outcome in corpus + mutations:
        if outcome.verdict == "environment":
            lines.append(f"- {outcome.plugin}: {outcome.case_id}: {_short(outcome.message)}")
    lines += ["", END]
    return "\n".join(lines)


def _in_checkout(text: str) -> str:
    """``text`` with the checkout's own path cut from the paths in it: where it lies is no figure."""
    return text.replace(str(DOC.parents[1]) + "/", "")


def _short(message: str) -> str:
    message = _in_checkout(message)
    for marker in ("kernel module missing", "not run on this host", *harness.ENVIRONMENT_MARKERS):
        if marker in message:
            start = message.index(marker)
            text = message[start:start + 110].split(";")[0]
            if "failed to create bridge" in message:  # a VLAN-filtering bridge
                text += " (the kernel lacks bridge VLAN filtering)"
            return text
    return message[:110]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print the section instead of writing it")
    options = parser.parse_args()
    started = time.monotonic()
    missing = harness.missing_kinds()
    corpus = run(harness.corpus_cases(), missing)
    mutations = run(harness.mutation_cases(), missing)
    text = section(corpus, mutations, missing, time.monotonic() - started)
    if options.check:
        print(text)
        return 0
    doc = DOC.read_text()
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(head + text + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
