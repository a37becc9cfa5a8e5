"""The report: JSON for tools, Markdown for people (docs/testing.md,
"Reading the report")."""
import json

FOLDERS = ("core/src", "control/src", "relays/src", "dsim/src", "sim/src")
# What a mutant's run ended as. killed and timed_out count as killed (a
# timeout only when the unmutated build passed the same tests within the
# limit, which the limit is made from); equivalent ones leave the score.
OUTCOMES = ("killed", "timed_out", "survived", "not_reached", "equivalent", "not_compiled",
            "not_run")
EQUIVALENT_SHARE_MAX = 0.10


def folder_of(path):
    for f in FOLDERS:
        if path.startswith(f + "/"):
            return f
    return path.split("/", 1)[0]


def tally(results):
    """{folder: {outcome: n, 'generated': n, 'score': ...}} with 'all'."""
    rows = {}
    for r in results:
        for key in (folder_of(r["file"]), "all"):
            row = rows.setdefault(key, dict(dict.fromkeys(OUTCOMES, 0), cut_short=0))
            row[r["outcome"]] += 1
            row["cut_short"] += 1 if r["outcome"] == "survived" and r.get("cut_short") else 0
    for row in rows.values():
        row["generated"] = sum(row[o] for o in OUTCOMES)  # cut_short is within survived
        row["compiled"] = row["generated"] - row["not_compiled"]
        dead = row["killed"] + row["timed_out"]
        scored = dead + row["survived"] + row["not_reached"]
        row["score"] = round(100.0 * dead / scored, 1) if scored else None
    return rows


def trustworthy(rows):
    compiled = rows.get("all", {}).get("compiled", 0)
    equivalent = rows.get("all", {}).get("equivalent", 0)
    return compiled == 0 or equivalent <= EQUIVALENT_SHARE_MAX * compiled


def write(path_json, path_md, run, results):
    rows = tally(results)
    doc = {"run": run, "folders": rows, "trustworthy": trustworthy(rows), "mutants": results}
    with open(path_json, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    with open(path_md, "w", encoding="utf-8") as f:
        f.write(markdown(run, rows, results))
    return rows


def time_spent(results):
    """Lines for where the mutant runs' test time went, by outcome."""
    spent = {}
    for r in results:
        if "seconds" in r:
            n, total = spent.get(r["outcome"], (0, 0.0))
            spent[r["outcome"]] = (n + 1, total + r["seconds"])
    if not spent:
        return []
    out = ["", "## Where the test time went", "",
           "| outcome | mutants | test minutes | per mutant (s) |", "|---|---:|---:|---:|"]
    for outcome in OUTCOMES:
        if outcome in spent:
            n, total = spent[outcome]
            out.append(f"| {outcome} | {n} | {total / 60:.1f} | {total / n:.0f} |")
    return out


def _cell(text):
    return str(text).replace("|", "\\|").replace("`", "'")


def markdown(run, rows, results):
    out = [f"# Mutation score: {run['command']}", ""]
    if run.get("rescored"):
        out += [f"Rescored {run['rescored']} with ci/mutation-equivalent.txt as it was then "
                f"(`ci/mutation --rescore`).", ""]
    out.append(f"Commit `{run['commit']}`, seed {run['seed']}, {run['date']}; "
               f"{run['minutes']:.1f} min on {run['jobs']} jobs "
               f"({run['mutants_per_minute']:.1f} mutants/min over the mutant runs, "
               f"{run['setup_minutes']:.1f} min of parsing, schemata, builds and the trace run"
               + (f"; a budget of {run['budget_minutes']:g} min, first pass "
                  f"{run['mutant_seconds']:g} test seconds a mutant" if "budget_minutes" in run
                  else "") + ").")
    out.append("")
    out.append("| folder | generated | compiled | killed | timed out | survived | not reached "
               "| equivalent | not run | score |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for folder in list(FOLDERS) + ["all"]:
        r = rows.get(folder)
        if not r:
            continue
        score = "n/a" if r["score"] is None else f"{r['score']}%"
        name = f"**{folder}**" if folder == "all" else f"`{folder}`"
        survived = f"{r['survived']}" + (f" ({r['cut_short']})" if r["cut_short"] else "")
        out.append(f"| {name} | {r['generated']} | {r['compiled']} | {r['killed']} | "
                   f"{r['timed_out']} | {survived} | {r['not_reached']} | "
                   f"{r['equivalent']} | {r['not_run']} | {score} |")
    out.append("")
    out.append("The score is killed and timed out over killed, timed out, survived and not "
               "reached; equivalent mutants (ci/mutation-equivalent.txt), mutants that did not "
               "compile and mutants the budget never started (not run) are outside it.")
    cut = rows.get("all", {}).get("cut_short", 0)
    if cut:
        out.append("")
        out.append(f"{cut} survivor(s), in brackets, were cut short: they passed the tests "
                   f"they ran, and the budget ended before the rest of the tests that reach "
                   f"them. A later test might have killed them, so the score is a lower "
                   f"bound; a longer --budget runs their other tests.")
    if not trustworthy(rows):
        out.append("")
        out.append(f"**The score is not trustworthy**: more than "
                   f"{EQUIVALENT_SHARE_MAX:.0%} of the compiled mutants are set aside as "
                   f"equivalent.")
    for title, which in (("Survivors", ("survived", "not_reached")),):
        chosen = [r for r in results if r["outcome"] in which]
        out += ["", f"## {title} ({len(chosen)})", ""]
        for r in chosen:
            ran = r.get("tests_run", r["tests_reached"])
            if r["outcome"] == "survived" and r.get("cut_short"):
                reach = (f"reached by {r['tests_reached']} test(s); cut short by the budget "
                         f"after {r['tests_finished']} of the {ran} it was to run, all passed")
            elif r["outcome"] != "survived":
                reach = "no test reaches it"
            elif ran == 0:
                reach = f"reached by {r['tests_reached']} test(s), in none of which its value differs"
            elif ran < r["tests_reached"]:
                reach = (f"reached by {r['tests_reached']} test(s); its value differs in {ran}, "
                         f"which all passed")
            else:
                reach = f"reached by {r['tests_reached']} test(s), all passed"
            out.append(f"- `{r['key']}` ({r['operator']}, in `{_cell(r['function'])}`; "
                       f"{r['preset']}; {reach})")
            out.append(f"  - `- {_cell(r['before'])}`")
            out.append(f"  - `+ {_cell(r['after'])}`")
            out.append(f"  - replay: `ci/mutation --only {r['fingerprint']}`")
    chosen = [r for r in results if r["outcome"] == "equivalent"]
    if chosen:
        out += ["", f"## Equivalent ({len(chosen)}): ci/mutation-equivalent.txt", ""]
        for r in chosen:
            out.append(f"- `{r['key']}` ({r['fingerprint']}): {_cell(r.get('reason', ''))}")
    out += time_spent(results)
    killers = {}
    for r in results:
        if r["outcome"] in ("killed", "timed_out"):
            killers[r["by"]] = killers.get(r["by"], 0) + 1
    if killers:
        out += ["", "## The tests that killed the most", ""]
        for name, n in sorted(killers.items(), key=lambda kv: -kv[1])[:15]:
            out.append(f"- {n}: `{name}`")
    return "\n".join(out) + "\n"
