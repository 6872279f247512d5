# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/performance.md from a benchmark run's results."""

from __future__ import annotations

import notes


def seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def plain(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def stats_row(label: str, stats: dict, fmt=seconds) -> str:
    return f"| {label} | {fmt(stats['median'])} | {fmt(stats['min'])} | {fmt(stats['max'])} | {stats['n']} |"


def stats_table(sides: dict, fmt=seconds, first_column: str = "side") -> list:
    lines = [f"| {first_column} | median | min | max | samples |", "|---|---:|---:|---:|---:|"]
    lines += [stats_row(label, stats, fmt) for label, stats in sides.items()]
    return lines


def ratio_text(ratio: dict) -> str:
    return f"**{ratio['median']:.2f}×** (min {ratio['min']:.2f}, max {ratio['max']:.2f}, {ratio['n']} pairs)"


def verdict(case: dict) -> str:
    if "met" not in case:
        return "—"
    return "**met**" if case["met"] else "**not met**"


def machine_section(results: dict) -> list:
    m = results["machine"]
    return [
        "## Machine", "",
        "A **shared 2-core VM**: other engineers ran their tests on it during the run, so absolute figures "
        "drift. Each case therefore measures its sides interleaved in one run (A, B, A, B, ...) and its ratios "
        "come from samples taken side by side; the load averages below show how busy the machine was.", "",
        "| item | value |", "|---|---|",
        f"| CPUs (`nproc`) | {m['nproc']} × {m['cpu']} |",
        f"| memory | {m['memory_gib']} GiB |",
        f"| OS / kernel | {m['os']} / {m['kernel']} |",
        f"| Python (managed node and controller) | {m['python']} |",
        f"| ansible-core | {m['ansible_core']} |",
        f"| containernetworking-plugins (`dpkg-query -W`) | {m['plugins_package']} |",
        f"| commit | {m['commit']} |",
        f"| load average (1, 5, 15 min) before / after | {fmt_load(m['load_before'])} / {fmt_load(m['load_after'])} |",
        f"| run | {results['mode']}, {results['started']} to {results['finished']} |",
        "",
    ]


def fmt_load(load) -> str:
    return ", ".join(f"{v:.2f}" for v in load)


def summary_row(title: str, target: str, measured: str, case: dict) -> str:
    return f"| {title} | {target} | {measured} | {verdict(case)} |"


def summary_section(cases: dict) -> list:
    lines = ["## Summary", "", "| case | target | measured (median) | |", "|---|---|---|---|"]
    for name, (title, target, measured) in SUMMARIES.items():
        case = cases.get(name)
        if case is None:
            continue
        if "error" in case:
            lines.append(f"| {title} | {target} | failed to run: {case['error']} | **not measured** |")
        else:
            lines.append(summary_row(title, target, measured(case), case))
    return lines + [""]


def case_section(name: str, case: dict) -> list:
    title = SUMMARIES.get(name, (name,))[0]
    lines = [f"## {title}", "", notes.WHAT[name].strip(), ""]
    if "error" in case:
        return lines + [f"**Not measured**: the run failed: `{case['error']}`", ""]
    lines += DETAILS[name](case)
    lines += ["", notes.ANALYSIS[name](case).strip()]
    return lines + [""]


def engine_details(case: dict) -> list:
    return stats_table({"engine (`Engine.add` + `Engine.delete`)": case["sides"]["engine"],
                        "engine with `os.fsync` a no-op (analysis only)": case["sides"]["engine_no_fsync"],
                        "plugins run directly with a timeout (analysis only)": case["sides"]["direct_timeout"],
                        "plugins run directly (floor)": case["sides"]["direct"]}) + [
        "", f"Per ADD+DEL cycle, {case['rounds']} rounds of {case['cycles_per_round']} cycles per side. Ratios of "
        f"the rounds' totals: engine / direct {ratio_text(case['ratio'])}; target ≤ {case['target']:.2f}: "
        f"{verdict(case)}. Engine without fsync / direct: {ratio_text(case['ratio_no_fsync'])}. Direct with a "
        f"timeout / direct: {ratio_text(case['ratio_timeout'])}. Engine / direct cycle by cycle (one ~30 ms "
        f"cycle against the next): {ratio_text(case['ratio_per_cycle'])}."]


def batch_details(case: dict) -> list:
    lines = stats_table(case["sides"], first_column=f"attach + detach {case['n']} namespaces")
    lines += ["", f"{case['rounds']} rounds. Loop / batch, side by side:", ""]
    lines += [f"- loop / {side}: {ratio_text(ratio)}" for side, ratio in case["ratios"].items()]
    return lines + ["", f"Target: the batch (default `parallel: 4`) ≥ {case['target']:.0f}× faster than the loop: "
                    f"{verdict(case)}. Whole playbook: {seconds(case['playbook_wall'])}."]


def converged_details(case: dict) -> list:
    lines = stats_table({"with CHECK (`run_check: true`, the default)": case["sides"]["check"],
                         "without CHECK (`run_check: false`)": case["sides"]["nocheck"],
                         "`ansible.builtin.ping` (the floor of any task)": case["sides"]["ping"]},
                        first_column=f"re-run of {case['n']} attachments in place")
    return lines + ["", f"Every re-run reported 0 changed. {case['rounds']} rounds; with / without CHECK: "
                    f"{ratio_text(case['ratio'])}; without CHECK / ping: {ratio_text(case['ratio_nocheck_ping'])}. "
                    f"Target: task wall time ≤ {case['target']} s: {verdict(case)}.", "",
                    "The module's own work, without Ansible (conf dir load and `converge_all` in one process, "
                    "same attachments, same rounds):", ""] + stats_table(
        {"with CHECK": case["in_process"]["in-process check"],
         "without CHECK": case["in_process"]["in-process nocheck"]}, first_column="in process")


def validation_details(case: dict) -> list:
    sides = case["sides"]
    warm = "validations per second (warm)"
    lines = ["| measure | median | min | max | samples |", "|---|---:|---:|---:|---:|",
             stats_row(warm, sides[warm], plain),
             stats_row("first validation in a new process (import + schema compilation)",
                       sides["first validation in a new process, s"])]
    return lines + ["", f"{case['n']} validations per round, {case['rounds']} rounds. "
                    f"Target ≥ {case['target']:,}/s: {verdict(case)}."]


def install_details(case: dict) -> list:
    lines = stats_table(case["sides"], first_column="`cni_plugin_install` task")
    first = case["first_install"]
    return lines + [
        "", f"First install: {seconds(first['seconds'])}, {first['bytes']:,} bytes downloaded. "
        f"The {case['rounds']} no-op re-runs together: {case['noop_requests']} requests, {case['noop_bytes']} bytes "
        f"served (counted by the test server), {'a change reported' if case['noop_changed'] else '0 changed'}. "
        f"Forced / no-op: {ratio_text(case['ratio'])}. Target (nothing downloaded, no change): {verdict(case)}.",
        "", "Parts of a no-op re-run, timed in process on the installed binaries:", ""] + stats_table(
        case["noop_breakdown"], first_column="work")


def scaling_details(case: dict) -> list:
    lines = stats_table(case["sides"], first_column="attach + detach, per attachment")
    lines += ["", "Marginal cost of each further attachment (the difference of the task times over the "
              "difference of sizes, per round), which excludes the task's fixed cost:", ""]
    lines += stats_table(case["marginal"], first_column="attachments")
    return lines + ["", f"{case['rounds']} rounds, batch task with the default `parallel: 4`. "
                    f"{case['ratio_label']}: {ratio_text(case['ratio'])}; target ≤ {case['target']:.2f} (flat): "
                    f"{verdict(case)}."]


def imports_details(case: dict) -> list:
    lines = ["| import (after `ansible.module_utils.basic`) | median | min | max | samples | pulls in |",
             "|---|---:|---:|---:|---:|---|"]
    for target, stats in case["sides"].items():
        heavy = ", ".join(case["heavy"][target]) or "—"
        lines.append(f"{stats_row(f'`{target}`', stats)} {heavy} |")
    basic = case["basic"]
    return lines + ["", f"`ansible.module_utils.basic` itself, which every module pays first: {seconds(basic['median'])} "
                    f"(min {seconds(basic['min'])}, max {seconds(basic['max'])}, {basic['n']} samples). "
                    f"{case['rounds']} rounds; each import in a fresh interpreter, timed inside it "
                    "(interpreter start-up excluded)."]


SUMMARIES = {
    "engine": ("1. Engine overhead", "engine / direct ≤ 1.10",
               lambda c: f"{c['ratio']['median']:.3f}× ({seconds(c['sides']['engine']['median'])} vs "
                         f"{seconds(c['sides']['direct']['median'])} per cycle)"),
    "batch": ("2. Batch vs loop", "batch ≥ 10× faster",
              lambda c: f"{c['ratio']['median']:.1f}× ({seconds(c['sides'][c['default_side']]['median'])} vs "
                        f"{seconds(c['sides']['loop']['median'])})"),
    "converged": ("3. Converged re-run", "≤ 1.5 s, 0 changed",
                  lambda c: f"{seconds(c['sides']['check']['median'])} with CHECK, "
                            f"{seconds(c['sides']['nocheck']['median'])} without; 0 changed"),
    "validation": ("4. Validation", "≥ 2,000 conflists/s",
                   lambda c: f"{plain(c['sides']['validations per second (warm)']['median'])}/s"),
    "install": ("5. Install re-run", "0 bytes downloaded",
                lambda c: f"{c['noop_bytes']} bytes, {seconds(c['sides']['no-op re-run']['median'])}"),
    "scaling": ("6. Scaling", "flat per attachment (≤ 1.20× from 50 to 200)",
                lambda c: f"{c['ratio']['median']:.2f}×"),
    "imports": ("Import cost on the managed node", "—", lambda c: "see section"),
}
DETAILS = {
    "engine": engine_details, "batch": batch_details, "converged": converged_details,
    "validation": validation_details, "install": install_details, "scaling": scaling_details,
    "imports": imports_details,
}


def render(results: dict) -> str:
    lines = ["# Performance", "", notes.INTRO.strip(), ""]
    lines += machine_section(results)
    lines += summary_section(results["cases"])
    for name, case in results["cases"].items():
        lines += case_section(name, case)
    return "\n".join(lines).rstrip() + "\n"
