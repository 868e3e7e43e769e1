"""Tune your own job from a terminal: the same trials, report and files as notebook 16.

    .venv/bin/python -m helpers.tune jobs/capstone_naive.py --budget 10m
    .venv/bin/python -m helpers.tune my_job.py --budget 30m --out reports/my_job

A job file defines ``make_model()`` and ``make_dataset(batch_size)`` (``jobs/template.py``).
Each trial is the job with one change, run in a fresh process for a warm-up epoch and
``--epochs`` timed ones, in ``--rounds`` rotated rounds. The changes that did not pay alone are
tried again on top of those that did (the bottleneck moves), and then every change that paid is
measured together against the job. The report (``report.md``, and ``report.json``, which
``python -m helpers.bench --gather`` reads) is written to ``--out``. The budget covers the trials:
when the next run would likely end after it, the tuner stops and reports what it measured.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from helpers import checks, cli
from helpers.timing import ProgressFn

#: Where the budget ends for the single trials, and for trying again on top of the winners; the rest
#: measures the combined settings against the job.
SHARES = (0.6, 0.85)


def budget_seconds(text: str) -> float:
    """``"10m"``, ``"90s"``, ``"1h"`` or a number of seconds, as seconds (argparse ``type=``)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text))
    if not match or float(match[1]) <= 0:
        raise argparse.ArgumentTypeError(
            f'must be a duration such as "10m", "90s" or "1h", got {text!r}'
        )
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[match[2]]


@checks.arguments(
    budget=checks.number(10.0, 7 * 24 * 3600.0, hint="seconds"),
    rounds=checks.whole(1, 100),
    epochs=checks.whole(1, 100),
    steps=checks.optional(checks.whole(1, 100_000)),
)
def tune(
    job: str | Path,
    budget: float = 600.0,
    rounds: int = 3,
    epochs: int = 3,
    steps: int | None = None,
    out: str | Path | None = None,
    on_progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Plan, run and report the trials for the job file ``job``. Returns the table, the reading,
    the markdown, the bench result, the combined trial it measured (``tuned``, None when no change
    paid) and, with ``out``, the paths written."""
    from helpers import env, stamp
    from helpers.topics.tune_your_own_job import jobfile, tune_files, tune_report, tuning

    loaded = jobfile.load(job)
    own = jobfile.settings_of(loaded)
    steps = steps or own["steps"]
    trials = tuning.plan({**own, "steps": steps})
    started, begun = time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.monotonic()

    def left(
        share: float,
    ) -> float:  # seconds until this share of the budget is spent (at least 10)
        return max(10.0, budget * share - (time.monotonic() - begun))

    outcomes = tuning.run_trials(
        job, trials, steps, epochs, rounds, left(SHARES[0]), on_progress=on_progress
    )
    frame = tune_report.table(outcomes)
    won = [outcomes[name].trial for name in tune_report.faster(frame)]  # best first
    clashed = tuning.clashes(won)  # a second batch size, say: the better one is kept
    won = [t for t in won if t.name not in clashed]
    second, combined, together = None, None, None
    retry = [outcomes[name].trial for name in tune_report.worth_retrying(frame)]
    if won and retry:  # the bottleneck moved: what did not pay alone may pay on top of what did
        base = tuning.combine(won[::-1])
        on_top = [tuning.Trial(tuning.BASELINE, base.settings, base.env, base.code)]
        on_top += [replace(tuning.combine([base, t]), name=t.name, code=t.code) for t in retry]
        second = tune_report.table(
            tuning.run_trials(job, on_top, steps, epochs, rounds, left(SHARES[1]))
        )
        won += [outcomes[name].trial for name in tune_report.faster(second)]
    if won:
        together = tuning.combine(won[::-1])  # the best single change wins a clash
        combined = tuning.run_trials(
            job, [tuning.Trial(tuning.BASELINE), together], steps, epochs, rounds, left(1.0)
        )
        frame = tune_report.table(outcomes, combined)
    frame.attrs["clashes"] = clashed
    machine, line = stamp.machine(), stamp.text(scale=env.scale())
    text = tune_report.markdown(frame, Path(job).name, line, second)
    data = tune_files.bench_result(
        frame,
        {**outcomes, **(combined or {})},
        str(job),
        machine,
        line,
        started,
        quick=env.scale() == "small",
    )
    report = {
        "table": frame,
        "on_top": second,
        "summary": tune_report.summary(frame, second),
        "markdown": text,
        "result": data,
        "tuned": together,
    }
    if out is not None:
        report["files"] = tune_files.save(out, frame, data, text)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.tune", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("job", help="a job file defining make_model() and make_dataset(batch_size)")
    parser.add_argument(
        "--budget",
        type=budget_seconds,
        default=600.0,
        help='time for all trials, e.g. "10m" (default)',
    )
    parser.add_argument(
        "--rounds", type=cli.whole(1, 100), default=3, help="rotated rounds per trial (default 3)"
    )
    parser.add_argument(
        "--epochs",
        type=cli.whole(1, 1_000),
        default=3,
        help="timed epochs per run, after a warm-up epoch (default 3)",
    )
    parser.add_argument(
        "--steps",
        type=cli.whole(1, 10**6),
        default=None,
        help="training steps per epoch (default: the job's STEPS)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="folder for report.md and report.json (default: tune-<job name>)",
    )
    args = parser.parse_args(argv)
    from tqdm.auto import tqdm

    from helpers.topics.tune_your_own_job.jobfile import JobError

    out = args.out or f"tune-{Path(args.job).stem}"
    bar = tqdm(total=1, desc="trials", unit="run", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        report = tune(args.job, args.budget, args.rounds, args.epochs, args.steps, out, progress)
    except (JobError, ValueError) as exc:  # TypeError too: checks.BadType is both
        bar.close()
        parser.exit(2, f"{parser.prog}: {exc}\n")
    except KeyboardInterrupt:
        bar.close()
        parser.exit(130, f"{parser.prog}: interrupted; no report written\n")
    bar.close()
    print(report["markdown"])
    print("written: " + ", ".join(str(p) for p in report["files"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
