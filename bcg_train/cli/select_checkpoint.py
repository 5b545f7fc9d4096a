"""bcg-select-checkpoint: evaluate every Nth checkpoint of a run with bcg-eval and name the best.

The checkpoint-choice protocol of every shipped policy (models/README.md), as one command:
each checkpoint whose iteration is a multiple of ``--every`` is exported (bcg-export) and
rolled in the bridge model under domain randomization (bcg-eval) on the selection seeds
(default 0-19, never the seeds a policy is reported on); one row per checkpoint goes to
``<run>/select/checkpoints.csv``. The best is the one with the fewest falls, then the
lowest E_track, then the earliest; it is written to ``<run>/select/best.json``. The table also
holds each checkpoint's mean longest flight (``flight_s``), which the choice does not use.

A run that writes ONNX policies instead of checkpoints (the PPO arm of ``bcg-benchmark``:
``<run>/policies/itNNNNNN.onnx`` with its ``.train.yaml``) is judged the same way, without
the export.

With ``--watch`` it runs beside ``bcg-train`` (started together: it waits up to
``WATCH_START_TIMEOUT_S`` for the run directory): it evaluates checkpoints as they appear and
stops once the run has written its ``summary.json`` (the end of a run) and every due
checkpoint is evaluated. Checkpoints already in the CSV are not evaluated again, unless they
were judged under other seeds, duration or ``--train-config`` (each row records them).

``--train-config`` judges every checkpoint under one training config's domain randomization
and contact (bcg-eval's flag) instead of the run's own: a run trained under harsher
randomization than the ship rule's is then chosen under the rule's conditions.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import re
import time
from pathlib import Path

from bcg_robot.cli.arguments import nonnegative_int, positive_float, positive_float_at_most, positive_int
from bcg_robot.errors import BCGInputError, ContractError, exit_on_input_error
from bcg_robot.paths import check_output_files, output_dir
from bcg_train.evaluate import MAX_DURATION_S, REPORT_FIRST_SEED, SELECTION_FIRST_SEED

# flight_s: the mean over seeds of the longest time with both feet off the floor (s; bcg-eval's
# longest_flight_s_mean), so a jump's hop and flight show in the table; blank in tables written before it
# first_seed, duration_s, judged_with: what the row was judged under (a --train-config, or 'own': each
# checkpoint's own config); a row judged under other settings than this run's is evaluated again
# checkpoint_sha256: of the file the row judged; a row whose file changed (a fresh run into the
# same directory) or is gone is judged again, not reused as this run's
CSV_FIELDS = ("iteration", "falls", "seeds", "e_track_cm", "root_z_cm", "flight_s", "first_seed", "duration_s", "judged_with",
              "checkpoint_sha256")
_INT_FIELDS = ("iteration", "falls", "seeds", "first_seed")
_STR_FIELDS = ("judged_with", "checkpoint_sha256")
# added later: blank, or no column, in older tables
_OPTIONAL_FIELDS = ("flight_s", "first_seed", "duration_s", "judged_with", "checkpoint_sha256")
OWN_CONFIG = "own"
# with --watch, how long to wait for bcg-train (started at the same time) to create the run directory
WATCH_START_TIMEOUT_S = 600.0
_CHECKPOINT = re.compile(r"^(\d{6})\.pkl$")
_POLICY = re.compile(r"^it(\d{6})\.onnx$")


def checkpoints(checkpoint_dir: Path, every: int) -> list[tuple[int, Path]]:
    """(iteration, path) of every checkpoint whose iteration is a multiple of ``every``, in order."""
    found = []
    for path in sorted(checkpoint_dir.iterdir()) if checkpoint_dir.is_dir() else []:
        match = _CHECKPOINT.match(path.name) or _POLICY.match(path.name)
        if match and int(match.group(1)) % every == 0:
            found.append((int(match.group(1)), path))
    return found


def run_finished(run_dir: Path, started: float, found: list[Path]) -> bool:
    """The run wrote its summary.json since this command started, or after its last checkpoint (a
    run that had finished before ``--watch`` started was waited on forever)."""
    summary = run_dir / "summary.json"
    if not summary.is_file():
        return False
    written = summary.stat().st_mtime
    return written >= started or (bool(found) and all(written >= path.stat().st_mtime for path in found))


class FileDigests:
    """SHA-256 of files, each read again only when its size or modification time changes
    (``--watch`` looks at every checkpoint at each poll)."""

    def __init__(self) -> None:
        self._known: dict[Path, tuple[tuple[int, int], str]] = {}

    def __call__(self, path: Path) -> str:
        st = path.stat()
        key = (st.st_size, st.st_mtime_ns)
        known = self._known.get(path)
        if known is None or known[0] != key:
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            known = self._known[path] = (key, digest.hexdigest())
        return known[1]


def current_rows(rows: list[dict], found: list[tuple[int, Path]], digest) -> list[dict]:
    """The rows that judged a checkpoint as it is now: same iteration, same file content."""
    now = {it: path for it, path in found}
    return [r for r in rows if r["iteration"] in now and r.get("checkpoint_sha256") == digest(now[r["iteration"]])]


def best_row(rows: list[dict]) -> dict:
    """Fewest falls, then the lowest E_track, then the earliest iteration."""
    if not rows:
        raise ValueError("no evaluated checkpoint")
    return min(rows, key=lambda r: (int(r["falls"]), float(r["e_track_cm"]), int(r["iteration"])))


def read_rows(path: Path) -> list[dict]:
    """The table's rows, typed; an optional column the table lacks (written before it existed) or
    a blank cell of one reads as None; a required column missing or blank, a cell that is not a
    finite number, a file that is not UTF-8 CSV, or a folder in the table's place, is a
    :class:`BCGInputError` naming the file."""
    if path.is_dir():
        raise BCGInputError(path, "is a directory, not a selection table")
    if not path.is_file():
        return []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
    except OSError as err:
        raise BCGInputError(path, f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise BCGInputError(path, f"not UTF-8 text (byte {err.start})") from None
    except csv.Error as err:
        raise BCGInputError(path, f"not a CSV table: {err}") from None
    missing = [k for k in CSV_FIELDS if k not in _OPTIONAL_FIELDS and k not in (reader.fieldnames or [])]
    if reader.fieldnames and missing:
        raise BCGInputError(path, f"line 1: no column '{missing[0]}' (header: {','.join(map(str, reader.fieldnames))})")
    return [_typed_row(path, line, row) for line, row in enumerate(rows, start=2)]


def _typed_row(path: Path, line: int, row: dict) -> dict:
    typed = {}
    for k in CSV_FIELDS:
        cell = row.get(k)
        if cell in (None, "") and k not in _OPTIONAL_FIELDS:  # a short row, or a blank cell
            raise BCGInputError(path, f"line {line}: column '{k}' is blank")
        if k in _STR_FIELDS:
            typed[k] = None if cell in (None, "") else cell
            continue
        try:
            typed[k] = None if cell in (None, "") else (int(cell) if k in _INT_FIELDS else float(cell))
            if isinstance(typed[k], float) and not math.isfinite(typed[k]):  # an int is finite (isfinite overflows on 10**400)
                raise ValueError
        except ValueError:
            raise BCGInputError(path, f"line {line}: column '{k}' is {cell!r}, not "
                                      f"{'an integer' if k in _INT_FIELDS else 'a finite number'}") from None
    return typed


def write_rows(path: Path, rows: list[dict]) -> None:
    """The whole table with the current header (an older table gains the new columns, blank),
    replaced in one rename so a reader never sees half of it."""
    partial = path.with_suffix(".csv.tmp")
    with open(partial, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows({k: "" if row.get(k) is None else row[k] for k in CSV_FIELDS} for row in rows)
    partial.replace(path)


def judging_settings(args) -> dict:
    """What a row is judged under: the seeds, the rollout length and the training config."""
    return {"seeds": args.seeds, "first_seed": args.first_seed, "duration_s": args.duration,
            "judged_with": str(args.train_config) if args.train_config is not None else OWN_CONFIG}


def judged_alike(row: dict, settings: dict) -> bool:
    """The row was judged under ``settings`` (a row that did not record them was not)."""
    return all(row.get(k) is not None and (abs(row[k] - v) <= 1e-9 if k == "duration_s" else row[k] == v)
               for k, v in settings.items())


def _rounded(x: float | None, missing: float | None) -> float | None:
    return missing if x is None else round(x, 3)


def _evaluate(iteration: int, checkpoint: Path, sha256: str, out: Path, args) -> dict:
    from bcg_train.cli.evaluate import main as evaluate
    from bcg_train.cli.export import main as export

    if checkpoint.suffix == ".onnx":  # already a policy (its .train.yaml beside it)
        policy = checkpoint
    else:
        policy = out / f"it{iteration:06d}.onnx"
        if export([str(checkpoint), "--out", str(policy)]) != 0:
            raise ContractError(checkpoint, "bcg-export failed")
    eval_dir = out / f"it{iteration:06d}_seeds{args.first_seed}-{args.first_seed + args.seeds - 1}"
    judged_with = ["--train-config", str(args.train_config)] if args.train_config is not None else []
    if evaluate([str(policy), "--seeds", str(args.seeds), "--first-seed", str(args.first_seed), "--duration", str(args.duration),
                 "--out", str(eval_dir), *judged_with]) != 0:
        raise ContractError(policy, "bcg-eval failed")
    summary = json.loads((eval_dir / "summary.json").read_text())
    return {"checkpoint_sha256": sha256, "iteration": iteration, "falls": summary["falls"], "seeds": summary["seeds"],
            # no seed measured (each diverged at its first step): ranked last among equal falls
            "e_track_cm": _rounded(summary["tracking_error_cm_mean"], float("inf")),
            "root_z_cm": _rounded(summary["root_height_error_cm"]["mean"], None),
            "flight_s": None if summary.get("longest_flight_s_mean") is None else round(summary["longest_flight_s_mean"], 4),
            **{k: v for k, v in judging_settings(args).items() if k != "seeds"}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-select-checkpoint", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a bcg-train run directory (with checkpoints/), or a bcg-benchmark PPO run (with policies/)")
    parser.add_argument("--every", type=positive_int, default=50, help="evaluate checkpoints whose iteration is a multiple of this")
    parser.add_argument("--seeds", type=positive_int, default=20, help="selection seeds per checkpoint")
    parser.add_argument("--first-seed", type=nonnegative_int, default=SELECTION_FIRST_SEED,
                        help=f"first selection seed (bcg-eval reports from seed {REPORT_FIRST_SEED} on by default)")
    parser.add_argument("--duration", type=positive_float_at_most(MAX_DURATION_S), default=8.0,
                        help=f"seconds per rollout (at most {MAX_DURATION_S:g})")
    parser.add_argument("--watch", action="store_true", help="follow a running bcg-train until it writes summary.json")
    parser.add_argument("--train-config", type=Path, default=None,
                        help="judge every checkpoint under this training config's DR and contact (default: the run's own)")
    parser.add_argument("--poll-s", type=positive_float, default=30.0, help="seconds between looks at the run directory with --watch")
    args = parser.parse_args(argv)
    if args.first_seed + args.seeds > REPORT_FIRST_SEED:  # chosen on the seeds bcg-eval reports on: in-sample figures
        parser.error(f"selection seeds {args.first_seed}-{args.first_seed + args.seeds - 1} reach into the held-out seeds "
                     f"bcg-eval reports on ({REPORT_FIRST_SEED} on): choose them below {REPORT_FIRST_SEED}")

    with exit_on_input_error(parser.prog):
        started = time.time()  # a summary.json older than this is an earlier run's
        waited_until = started + (WATCH_START_TIMEOUT_S if args.watch else 0.0)
        while args.watch and not args.run_dir.is_dir() and time.time() < waited_until:
            time.sleep(min(args.poll_s, 5.0))
        if not args.run_dir.is_dir():
            raise ContractError(args.run_dir, "no such run directory" + (f" after {WATCH_START_TIMEOUT_S:g} s" if args.watch else ""))
        if args.train_config is not None and not args.train_config.is_file():
            raise ContractError(args.train_config, "no such training config (--train-config)")
        out = output_dir(args.run_dir / "select", "the run's select/ folder")
        check_output_files(out, ("best.json",), "the run's select/ folder")  # written after every evaluation
        table = out / "checkpoints.csv"
        rows = read_rows(table)
        settings = judging_settings(args)
        alike = [r for r in rows if judged_alike(r, settings)]
        if len(alike) < len(rows):  # best.json names one set of conditions, and every row must have been judged under it
            print(f"bcg-select-checkpoint: {len(rows) - len(alike)} row(s) of {table} were judged under other seeds, duration "
                  f"or config (or did not record them): evaluated again", flush=True)
        rows = alike
        digest = FileDigests()
        while True:
            found = checkpoints(args.run_dir / ("policies" if (args.run_dir / "policies").is_dir() else "checkpoints"), args.every)
            finished = run_finished(args.run_dir, started, [path for _, path in found])
            current = current_rows(rows, found, digest)
            if len(current) < len(rows):
                print(f"bcg-select-checkpoint: {len(rows) - len(current)} row(s) of {table} judged a checkpoint that is "
                      "gone or has changed since (another run's, or judged before the file recorded its digest): "
                      "dropped, and their checkpoints judged again", flush=True)
                rows = current
                write_rows(table, rows)
            done = {r["iteration"] for r in rows}
            due = [(it, path) for it, path in found if it not in done]
            for iteration, checkpoint in due:
                row = _evaluate(iteration, checkpoint, digest(checkpoint), out, args)
                rows.append(row)
                write_rows(table, rows)
                flight = f", longest flight {row['flight_s']:.3f} s" if row["flight_s"] is not None else ""
                print(f"bcg-select-checkpoint: iteration {iteration}: {row['falls']}/{row['seeds']} falls, "
                      f"E_track {row['e_track_cm']:.2f} cm{flight}", flush=True)
            if not args.watch or (finished and not due):
                break
            if not due:
                time.sleep(args.poll_s)
        if not rows:
            raise ContractError(args.run_dir, f"no checkpoint at a multiple of {args.every} iterations")
        best = best_row(rows)
        (out / "best.json").write_text(json.dumps({**best, "rule": "fewest falls, then lowest E_track, then earliest",
                                                   "selection_seeds": [args.first_seed, args.first_seed + args.seeds - 1],
                                                   "duration_s": args.duration,
                                                   "judged_with": str(args.train_config) if args.train_config else "each checkpoint's own config"},
                                                  indent=2) + "\n")
        print(f"bcg-select-checkpoint: best iteration {best['iteration']} ({best['falls']}/{best['seeds']} falls, "
              f"E_track {best['e_track_cm']:.2f} cm); table {table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
