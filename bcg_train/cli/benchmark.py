"""bcg-benchmark: SHAC+BCG vs SHAC on stiff contact vs PPO on one imitation task.

Each method trains from the same task config for a fixed budget of iterations. The
published claim it tests: SHAC+BCG needs >= 10x fewer environment steps than PPO, and
vanilla SHAC on stiff contact stalls. Wall time excludes the first (compiling) iteration.
PPO is brax's PPO trainer (:mod:`bcg_train.learn.ppo_baseline`).

Two thresholds, each reported as the environment steps and wall time to reach it:

* **evaluated** (the verdict): every ``--eval-every`` iterations each method leaves a policy
  (SHAC its checkpoints, PPO an ONNX export, :mod:`bcg_train.export.ppo_policy`), which
  ``bcg-select-checkpoint <out>/<method>`` rolls in the bridge model under the task's domain
  randomization, exactly as a shipped policy is judged. The threshold is the first policy
  with at most ``--eval-max-falls`` falls on the selection seeds and E_track at most
  ``--eval-max-etrack`` cm. ``bcg-benchmark --report --out <out>`` reads the selection tables
  and writes the verdict (``benchmark.json``, ``benchmark.png``); the training run alone cannot
  (the selection runs beside it or after).
* **training** (kept for comparison with earlier runs): the 5-iteration mean of the training's
  ``tracking_error_m`` below ``--threshold`` cm. It is not a learning threshold on a task whose
  actions are relative to the clip (``action_offset: reference``): the first iterations only see
  the clip's standing start and pass it before anything is learned, and with 8 environments it
  swings 1-10 cm between iterations. PPO's value is brax's training episode metric (per-step mean
  over the last 100 finished episodes), so it trails the policy by up to an episode.

Each method's directory ``<out>/<method>/`` holds ``history.json`` (one row per iteration; a SHAC arm
may instead be a ``bcg-train --run-dir <out>/<method>`` run, resumable, whose ``metrics.csv`` is read),
``summary.json`` (written at the end, which ``bcg-select-checkpoint --watch`` waits for), and
``checkpoints/`` (SHAC) or ``policies/itNNNNNN.onnx`` with their ``.train.yaml`` (PPO).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import pickle
import re
from pathlib import Path
from typing import Callable

import numpy as np

from bcg_robot.cli.arguments import nonnegative_int, positive_float, positive_int
from bcg_robot.errors import BCGInputError, exit_on_input_error
from bcg_robot.paths import check_output_files, output_dir
from bcg_train.learn.config import PRESETS, TRAIN_CONFIG_DIR, config_hash, load_train_config, motion_sha256

METHODS = ("shac_bcg", "shac_stiff", "ppo")
WINDOW = 5


def steps_to_threshold(history: list[dict], threshold_m: float) -> tuple[float | None, float | None]:
    errors = np.array([h["tracking_error_m"] for h in history])
    for i in range(WINDOW - 1, len(errors)):
        if errors[i - WINDOW + 1 : i + 1].mean() < threshold_m:
            return history[i]["env_steps"], history[i]["wall_s"]
    return None, None


def evaluated_threshold(history: list[dict], rows: list[dict], max_falls: int, max_e_track_cm: float,
                        steps_per_iteration: int) -> dict | None:
    """The first judged policy (``rows``: ``bcg-select-checkpoint``'s table) with at most ``max_falls``
    falls and E_track at most ``max_e_track_cm``: its iteration, env steps and wall time, or None."""
    wall = {int(round(h["env_steps"] / steps_per_iteration)): h["wall_s"] for h in history}
    for row in sorted(rows, key=lambda r: int(r["iteration"])):
        if int(row["falls"]) <= max_falls and float(row["e_track_cm"]) <= max_e_track_cm:
            it = int(row["iteration"])
            return {"iteration": it, "env_steps": float(it * steps_per_iteration), "wall_s": wall.get(it),
                    "falls": int(row["falls"]), "seeds": int(row["seeds"]), "e_track_cm": float(row["e_track_cm"])}
    return None


def run_shac(cfg, iterations: int, max_train_s: float | None = None) -> list[dict]:
    from bcg_train.learn.train import train

    _, _, history = train(cfg, iterations=iterations, progress=True, max_train_s=max_train_s)
    compiled_at = history[0]["wall_s"]  # the first iteration includes the compile, as for PPO
    return [dict(h, wall_s=h["wall_s"] - compiled_at) for h in history]


def ppo_policy_writer(cfg, ppo_cfg, every: int, policies: Path, start_iteration: int = 0):
    """brax's ``policy_params_fn`` that writes the policy every ``every`` iterations as
    ``policies/itNNNNNN.onnx`` with the resolved config beside it (as ``bcg-export`` does), and
    brax's parameters as ``itNNNNNN.params.pkl`` to resume from (``--resume-ppo``). Iterations
    count on from ``start_iteration``."""
    import jax

    from bcg_robot.config import load_robot_config
    from bcg_robot.yaml_dataclass import dump_dataclass
    from bcg_train.export.policy import ExportError, reference_offset_table
    from bcg_train.export.ppo_policy import export_ppo_onnx

    robot = load_robot_config()
    ref, table = reference_offset_table(cfg, robot)
    steps_per_iteration = ppo_cfg.num_envs * ppo_cfg.rollout_steps
    provenance = ppo_run_provenance(cfg, ppo_cfg.num_envs)

    def write(env_steps: int, make_policy, params) -> None:
        iteration = start_iteration + int(env_steps) // steps_per_iteration
        if iteration > start_iteration and iteration % every == 0:
            try:
                path = export_ppo_onnx(policies / f"it{iteration:06d}.onnx", cfg, robot, params, ppo_cfg.action_clip, ref.name,
                                       ref.length_s, table)
            except ExportError as err:  # a diverged run: no policy for this iteration, the run goes on
                print(f"bcg-benchmark: PPO iteration {iteration}: {err}", flush=True)
                return
            dump_dataclass(cfg, path.with_suffix(".train.yaml"))
            with open(policies / f"it{iteration:06d}.params.pkl", "wb") as f:
                pickle.dump({"params": jax.device_get(params), **provenance}, f)

    return write


def ppo_provenance(config_hash: str, motion_digest: str | None, num_envs: int) -> dict:
    """What a PPO parameter file was trained with, which a resumed part must share: the
    config (hash), the clip's bytes (SHA-256) and the environment count (the env steps of the
    resumed rows count on from the iteration at that count)."""
    return {"config_hash": config_hash, "motion_sha256": motion_digest, "num_envs": int(num_envs)}


def ppo_run_provenance(cfg, num_envs: int) -> dict:
    """:func:`ppo_provenance` of a PPO run of ``cfg`` with ``num_envs`` environments: what its
    parameter files record and what a resumed run checks them against."""
    return ppo_provenance(config_hash(cfg), motion_sha256(cfg), num_envs)


def ppo_resume_point(path: Path, expected: dict | None = None) -> tuple[int, object]:
    """(iteration, brax params) of a ``itNNNNNN.params.pkl`` written by :func:`ppo_policy_writer`.
    ``expected``: the resuming run's :func:`ppo_provenance`, which the file's must equal (a file
    written before they were recorded holds the bare params and is not checked)."""
    match = re.match(r"^it(\d{6})\.params\.pkl$", path.name)
    if not path.is_file() or match is None:
        raise BCGInputError(path, "not a PPO parameter file itNNNNNN.params.pkl written by bcg-benchmark (--resume-ppo)")
    try:
        with open(path, "rb") as f:
            loaded = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as err:
        raise BCGInputError(path, f"cannot read PPO parameters: {err}") from None
    if isinstance(loaded, dict) and "params" in loaded:
        for key, value in (expected or {}).items():
            if loaded.get(key, value) != value:
                raise BCGInputError(path, f"written by a run with another {key} ({loaded[key]}, this run {value}): "
                                          "resume with the task, preset and --ppo-envs it was trained with")
        loaded = loaded["params"]
    return int(match.group(1)), loaded


class _TimeUp(Exception):
    """Raised from brax's progress callback to end a PPO part at ``max_train_s``."""


def run_ppo(cfg, iterations: int, num_envs: int, seed: int, export_every: int | None = None,
            resume: tuple[int, object] | None = None, max_train_s: float | None = None,
            on_rows: Callable[[list[dict]], None] | None = None, task=None) -> list[dict]:
    """brax's PPO (see :mod:`bcg_train.learn.ppo_baseline`): one row per rollout of all environments;
    with ``export_every``, its policy as ONNX every that many iterations (:func:`ppo_policy_writer`).
    ``resume``: (iteration, params) to continue from; rows then count env steps from that iteration on.
    ``max_train_s`` ends the run after the iteration that ends that many seconds after the first
    (compiling) one; ``on_rows`` gets the rows so far after every iteration (to save them).
    ``task``: default ``cfg``'s (:func:`bcg_train.learn.train.make_task`)."""
    from tqdm import tqdm

    from bcg_train.learn.ppo_baseline import PPOConfig, train_ppo
    from bcg_train.learn.train import make_task

    start, params = resume if resume is not None else (0, None)
    ppo_cfg = PPOConfig(num_envs=num_envs, iterations=iterations, actor_hidden=cfg.shac.actor_hidden, critic_hidden=cfg.shac.critic_hidden)
    writer = ppo_policy_writer(cfg, ppo_cfg, export_every, Path(cfg.run_dir) / "policies", start) if export_every else None
    offset = start * num_envs * ppo_cfg.rollout_steps
    rows: list[dict] = []
    with tqdm(total=iterations, desc="ppo (brax)") as bar:
        def progress(row: dict) -> None:
            rows.append(dict(row, env_steps=row["env_steps"] + offset))
            bar.update(1)
            bar.set_postfix(reward=f"{row['reward']:.3f}", err_cm=f"{100 * row.get('tracking_error_m', float('nan')):.2f}")
            if on_rows is not None:
                on_rows(rows)
            if max_train_s is not None and row["wall_s"] >= max_train_s:
                raise _TimeUp

        try:
            train_ppo(task if task is not None else make_task(cfg), ppo_cfg, seed=seed + start, progress_fn=progress, policy_params_fn=writer, restore_params=params)
        except _TimeUp:
            bar.write(f"ppo: stopped after {len(rows)} iterations at {rows[-1]['wall_s']:.0f} s of training (--max-train-s)")
    return rows


def merge_history(previous: list[dict], new: list[dict], steps_per_iteration: int, start_iteration: int) -> list[dict]:
    """The rows of an earlier part up to ``start_iteration``, then the new part's, its wall time
    counted on from the earlier part's at that iteration."""
    kept = [h for h in previous if h["env_steps"] <= start_iteration * steps_per_iteration]
    wall0 = kept[-1]["wall_s"] if kept else 0.0
    return kept + [dict(h, wall_s=h["wall_s"] + wall0) for h in new]


def method_config(base, method: str, run_dir: Path, eval_every: int):
    """The benchmark's config of ``method``: the task's, on stiff contact, SHAC with or without BCG.
    PPO steps the plain physics, as every evaluation does: with the task's ``mode: bcg`` its
    environment stepped the mean of perturbed branches wherever contact was stiff (the squat
    benchmark of 2026-12-05 ran so), a smoothed dynamics no other arm trained on, and paid for
    the branches in its wall time."""
    task = dataclasses.replace(base.task, contact="stiff")
    task = dataclasses.replace(task, bcg=dataclasses.replace(base.task.bcg, mode="bcg" if method == "shac_bcg" else "plain"))
    return dataclasses.replace(base, run_dir=str(run_dir), task=task, checkpoint_every=eval_every)


REPORT_FILES = ("benchmark.json", "benchmark.png")  # what report() writes into --out
# what the report reads of every history row: the counts every row has, the training metrics those
# rows have in which an episode ended (a resumed brax run's first row has NaN there)
COUNT_KEYS = ("env_steps", "wall_s")
METRIC_KEYS = ("tracking_error_m", "reward")
HISTORY_KEYS = COUNT_KEYS + METRIC_KEYS


def _checked_rows(path: Path, rows, keys: tuple[str, ...]) -> list[dict]:
    """``rows`` when it is a non-empty list of rows that each hold a finite number under every one of
    ``keys``; else a :class:`BCGInputError` naming the file (a NaN gave a report of NaNs, exit 0)."""
    if not isinstance(rows, list) or not rows:
        raise BCGInputError(path, "no rows")
    for i, row in enumerate(rows, start=1):
        missing = [k for k in keys if not isinstance(row, dict) or not _is_finite_number(row.get(k))]
        if missing:
            raise BCGInputError(path, f"row {i} has no finite number under {', '.join(missing)}")
    return rows


def _is_finite_number(value) -> bool:
    """A float that is finite, or an int a float can hold (JSON's 1e400 is inf, its 10**400 an int)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def history_from_json(path: Path) -> tuple[list[dict], float]:
    """A method's ``history.json`` (as :func:`main` writes it) as benchmark rows and its env steps per
    iteration; a file that is not one (cut short, another JSON) is a :class:`BCGInputError` naming it."""
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError) as err:  # ValueError: JSONDecodeError, UnicodeDecodeError
        raise BCGInputError(path, f"not readable as JSON: {err}") from None
    per_iteration = saved.get("steps_per_iteration") if isinstance(saved, dict) else None
    if not isinstance(per_iteration, (int, float)) or not per_iteration > 0:
        raise BCGInputError(path, "not a bcg-benchmark history: needs steps_per_iteration (a number > 0) and rows")
    return _rows_with_metrics(path, _checked_rows(path, saved.get("rows"), COUNT_KEYS)), per_iteration


def _rows_with_metrics(path: Path, rows: list[dict]) -> list[dict]:
    """The rows with finite training metrics. brax reports its first evaluation of a resumed run
    before any episode ended, as NaN (the squat benchmark's PPO row 801): such a row says nothing
    about training and is left out. A history with no such row at all is refused (it gave a report
    of NaNs, exit 0)."""
    kept = [r for r in rows if all(_is_finite_number(r.get(k)) for k in METRIC_KEYS)]
    if not kept:
        raise BCGInputError(path, f"no row has a finite number under {', '.join(METRIC_KEYS)}")
    return kept


def history_from_metrics_csv(path: Path) -> tuple[list[dict], int]:
    """A ``bcg-train`` run's ``metrics.csv`` as benchmark rows and its env steps per iteration, so a
    SHAC arm can be a ``bcg-train`` run resumed over several sessions. ``wall_s`` restarts with each
    part (its first row includes that part's compile): rows get the training time summed over the
    parts, each part's first (compiling) iteration left out as in :func:`run_shac`."""
    try:
        with open(path, newline="") as f:
            raw = [{k: float(v) for k, v in r.items() if v != ""} for r in csv.DictReader(f)]
    except (ValueError, TypeError) as err:  # a cell that is not a number, a row longer or shorter than the header
        raise BCGInputError(path, f"not a bcg-train metrics table: {err}") from None
    _checked_rows(path, raw, ("iteration", *HISTORY_KEYS))
    if raw[0]["iteration"] < 1:
        raise BCGInputError(path, f"row 1: iteration {raw[0]['iteration']:g} (bcg-train counts iterations from 1)")
    per_iteration = int(round(raw[0]["env_steps"] / raw[0]["iteration"]))
    rows, done, part_start, previous = [], 0.0, None, None
    for r in raw:
        if previous is None or r["wall_s"] < previous["wall_s"] or r["iteration"] != previous["iteration"] + 1:
            done = rows[-1]["wall_s"] if rows else 0.0  # a new part: its first row is its compile
            part_start = r["wall_s"]
        rows.append(dict(r, wall_s=done + r["wall_s"] - part_start))
        previous = r
    return rows, per_iteration


JUDGING_KEYS = ("seeds", "first_seed", "duration_s", "judged_with")  # what a selection row was judged under


def check_judged_alike(out: Path, judged: dict[str, list[dict]]) -> dict:
    """Every method's policies judged under the same seeds, rollout length and config: an arm judged
    on 5 seeds passes "<= 2 falls" far more easily than one judged on 20. Returns what was checked
    (``{"alike": {key: value}, "not_recorded": [keys]}``): a table older than a column leaves it
    empty in every row, which compares equal and proves nothing, so the report says so."""
    seen: dict[tuple, str] = {}
    for method, rows in judged.items():
        for row in rows:
            settings = tuple(row.get(k) for k in JUDGING_KEYS)
            seen.setdefault(settings, f"{method} iteration {row['iteration']}")
    if len(seen) > 1:
        (a, where_a), (b, where_b) = list(seen.items())[:2]
        raise BCGInputError(out, f"the selection tables judged under different settings ({', '.join(JUDGING_KEYS)}): "
                                 f"{where_a} {list(a)}, {where_b} {list(b)}; judge every method alike (bcg-select-checkpoint)")
    settings = dict(zip(JUDGING_KEYS, next(iter(seen)))) if seen else {}
    return {"alike": {k: v for k, v in settings.items() if v not in (None, "")},
            "not_recorded": [k for k in JUDGING_KEYS if settings.get(k) in (None, "")]}


def report(out: Path, threshold_cm: float, max_falls: int, max_e_track_cm: float) -> dict:
    """benchmark.json from each method's history and selection table under ``out``."""
    from bcg_train.cli.select_checkpoint import read_rows

    check_output_files(out, REPORT_FILES, "--out")
    results, plotted = {}, {}
    for method in METHODS:
        run = out / method
        if (run / "history.json").is_file():
            history, per_iteration = history_from_json(run / "history.json")
        elif (run / "metrics.csv").is_file():  # a bcg-train run (SHAC), possibly resumed
            history, per_iteration = history_from_metrics_csv(run / "metrics.csv")
        else:
            continue
        steps, wall = steps_to_threshold(history, threshold_cm / 100.0)
        rows = read_rows(run / "select" / "checkpoints.csv")
        plotted[method] = {"judged": rows, "steps_per_iteration": per_iteration, "history": history}
        results[method] = {
            "evaluated_threshold": evaluated_threshold(history, rows, max_falls, max_e_track_cm, per_iteration) if rows else None,
            "policies_judged": len(rows),
            "judged": rows,
            "env_steps_to_training_threshold": steps, "wall_s_to_training_threshold": wall,
            "final_tracking_error_cm": 100 * history[-1]["tracking_error_m"], "final_reward": history[-1]["reward"],
            "env_steps_total": history[-1]["env_steps"], "wall_s_total": history[-1]["wall_s"],
        }
    if not results:  # an empty benchmark.json would read as a benchmark that ran nothing
        raise BCGInputError(out, f"nothing to report: no {', '.join(METHODS)} folder with a history.json or metrics.csv (--report)")
    judging = check_judged_alike(out, {m: r["judged"] for m, r in results.items()})
    ref = (results.get("shac_bcg", {}).get("evaluated_threshold") or {}).get("env_steps")
    ratios = {}
    for m in ("ppo", "shac_stiff"):
        other = (results.get(m, {}).get("evaluated_threshold") or {}).get("env_steps")
        if ref and other:
            ratios[f"{m}_to_shac_bcg_env_steps"] = other / ref
        elif ref and m in results and results[m]["judged"]:
            # not reached by any judged policy: at least the last judged one's steps / SHAC+BCG's (not
            # its whole budget: past the last judged policy nothing is known; none judged, no ratio)
            last = max(int(r["iteration"]) for r in results[m]["judged"])
            ratios[f"{m}_to_shac_bcg_env_steps_at_least"] = last * plotted[m]["steps_per_iteration"] / ref
    verdict = {"threshold": {"max_falls": max_falls, "max_e_track_cm": max_e_track_cm, "training_threshold_cm": threshold_cm},
               "judged_alike": judging, "methods": results, "ratios": ratios}
    (out / "benchmark.json").write_text(json.dumps(verdict, indent=2) + "\n")
    from bcg_train.learn.curves import plot_benchmark

    plot_benchmark(plotted, out / "benchmark.png", max_falls, max_e_track_cm)
    print(f"evaluated threshold: <= {max_falls} falls and E_track <= {max_e_track_cm:g} cm on the selection seeds")
    print(f"{'method':<11} {'judged':>6} {'first passing it.':>17} {'env steps':>10} {'wall s':>8} {'total steps':>12}")
    for m, r in results.items():
        e = r["evaluated_threshold"]
        first = (str(e["iteration"]), f"{e['env_steps']:.0f}", f"{e['wall_s']:.0f}" if e["wall_s"] is not None else "-") if e else ("not reached", "-", "-")
        print(f"{m:<11} {r['policies_judged']:>6} {first[0]:>17} {first[1]:>10} {first[2]:>8} {r['env_steps_total']:>12.0f}")
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}x")
    if judging["not_recorded"]:
        print(f"judged alike: not recorded in the selection tables ({', '.join(judging['not_recorded'])}): check those by hand")
    return verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-benchmark", description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="squat", help="default squat (a posture change to learn, not a pose to hold)")
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--preset", choices=PRESETS, default="cpu-small")
    parser.add_argument("--iterations", type=positive_int, default=100, help="iterations per method")
    parser.add_argument("--ppo-envs", type=positive_int, default=64, help="PPO environments (published: 4096)")
    parser.add_argument("--eval-every", type=positive_int, default=50, help="iterations between the policies each method leaves to be judged")
    parser.add_argument("--eval-max-falls", type=nonnegative_int, default=2, help="evaluated threshold: most falls on the selection seeds")
    parser.add_argument("--eval-max-etrack", type=positive_float, default=2.5, help="evaluated threshold: largest E_track (cm)")
    parser.add_argument("--threshold", type=positive_float, default=2.5,
                        help="training threshold (cm) on the training's tracking_error_m: world-frame key-body error, drift and the "
                             "steps before a fall included, so not bcg-eval's root-relative E_track")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--out", type=Path, default=Path("runs/benchmark"))
    parser.add_argument("--max-train-s", type=positive_float, default=None,
                        help="end each method after the iteration that ends this long after its first (compiling) one")
    parser.add_argument("--resume-ppo", type=Path, default=None,
                        help="continue the PPO arm from its policies/itNNNNNN.params.pkl (networks and normalizer; brax starts "
                             "its optimizer and environments fresh); --iterations more are run")
    parser.add_argument("--report", action="store_true", help="train nothing: write benchmark.json from what --out holds")
    args = parser.parse_args(argv)
    if args.resume_ppo is not None and args.methods != ["ppo"]:
        parser.error("--resume-ppo continues the PPO arm alone: give --methods ppo")
    with exit_on_input_error(parser.prog):
        if not args.report:
            output_dir(args.out, "--out")  # a file there was a traceback after the first method had trained
            check_output_files(args.out, REPORT_FILES, "--out")  # the report comes after the training
            base = load_train_config(args.config or TRAIN_CONFIG_DIR / f"{args.task}.yaml", args.preset)
            for method in args.methods:
                run_dir = args.out / method
                cfg = method_config(base, method, run_dir, args.eval_every)
                if method == "ppo":
                    from bcg_train.learn.ppo_baseline import PPOConfig

                    per_iteration = args.ppo_envs * PPOConfig.rollout_steps
                    resume = None
                    if args.resume_ppo is not None:
                        resume = ppo_resume_point(args.resume_ppo, ppo_run_provenance(cfg, args.ppo_envs))
                    earlier = []
                    if resume is not None and (run_dir / "history.json").is_file():
                        earlier, _ = history_from_json(run_dir / "history.json")

                    def merged(rows: list[dict]) -> list[dict]:
                        return merge_history(earlier, rows, per_iteration, resume[0]) if resume is not None else rows

                    def save(rows: list[dict]) -> None:  # after every iteration: a part cut short keeps its rows
                        run_dir.mkdir(parents=True, exist_ok=True)
                        tmp = run_dir / "history.json.tmp"  # replaced whole: a kill mid-write leaves the last complete file
                        tmp.write_text(json.dumps({"steps_per_iteration": per_iteration, "rows": merged(rows)}) + "\n")
                        tmp.replace(run_dir / "history.json")

                    history = merged(run_ppo(cfg, args.iterations, args.ppo_envs, base.seed, args.eval_every, resume, args.max_train_s, save))
                    (run_dir / "summary.json").write_text(json.dumps({"method": method, "iterations": len(history),
                                                                      "env_steps": history[-1]["env_steps"], "wall_s": history[-1]["wall_s"]}, indent=2) + "\n")
                else:  # SHAC's train() writes its own summary.json
                    history = run_shac(cfg, args.iterations, args.max_train_s)
                    run_dir.mkdir(parents=True, exist_ok=True)
                    (run_dir / "history.json").write_text(json.dumps({"steps_per_iteration": cfg.shac.num_envs * cfg.shac.horizon, "rows": history}) + "\n")
        elif not args.out.is_dir():
            raise BCGInputError(args.out, "no benchmark directory (--report)")
        report(args.out, args.threshold, args.eval_max_falls, args.eval_max_etrack)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
