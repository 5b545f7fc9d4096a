"""bcg-select-checkpoint: which checkpoints are due, the choice rule, and its errors."""

import hashlib
import json
from pathlib import Path

import pytest

from bcg_robot.errors import BCGInputError
from bcg_train.cli.select_checkpoint import best_row, checkpoints, main, read_rows


def _judge_standing(monkeypatch) -> list[str]:
    """bcg-export and bcg-eval (our own CLIs: test_train_cli runs bcg-export's working path,
    test_bcg_eval bcg-eval's) replaced by a recorder that writes
    a standing policy's summary; returns the evaluation folders it was asked for, in order."""
    import bcg_train.cli.evaluate as evaluate_cli
    import bcg_train.cli.export as export_cli

    calls = []

    def fake_eval(argv):
        calls.append(argv[argv.index("--out") + 1])
        out = Path(calls[-1])
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps({"falls": 0, "seeds": 20, "tracking_error_cm_mean": 1.0,
                                                      "root_height_error_cm": {"mean": 1.0}}))
        return 0

    monkeypatch.setattr(export_cli, "main", lambda argv: 0)
    monkeypatch.setattr(evaluate_cli, "main", fake_eval)
    return calls


def test_checkpoints_are_the_multiples_in_order(tmp_path):
    ckpts = tmp_path / "checkpoints"
    ckpts.mkdir()
    for it in (25, 50, 75, 100, 150, 163):
        (ckpts / f"{it:06d}.pkl").write_bytes(b"")
    (ckpts / "000200.tmp").write_bytes(b"")  # a checkpoint being written
    (ckpts / "notes.pkl").write_bytes(b"")
    assert [it for it, _ in checkpoints(ckpts, 50)] == [50, 100, 150]
    assert [p.name for _, p in checkpoints(ckpts, 25)] == ["000025.pkl", "000050.pkl", "000075.pkl", "000100.pkl", "000150.pkl"]
    assert checkpoints(tmp_path / "none", 50) == []


def test_a_row_is_reused_only_for_the_checkpoint_file_it_judged(tmp_path, monkeypatch):
    """Rows were matched on the iteration alone: a fresh run into the same directory reused the
    earlier run's figures for its own checkpoints (and judged the earlier run's later ones as its
    own). A row whose file changed or is gone is dropped and its checkpoint judged again."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for it in (50, 100):
        (run / "checkpoints" / f"{it:06d}.pkl").write_bytes(f"first run {it}".encode())
    calls = _judge_standing(monkeypatch)
    assert main([str(run)]) == 0 and len(calls) == 2
    calls.clear()
    assert main([str(run)]) == 0 and calls == []  # nothing changed: every row reused
    (run / "checkpoints" / "000050.pkl").write_bytes(b"second run 50")  # another run's iteration 50
    (run / "checkpoints" / "000100.pkl").unlink()
    assert main([str(run)]) == 0
    assert len(calls) == 1 and "it000050" in calls[0]
    rows = read_rows(run / "select" / "checkpoints.csv")
    assert [r["iteration"] for r in rows] == [50]
    assert rows[0]["checkpoint_sha256"] == hashlib.sha256(b"second run 50").hexdigest()


def test_best_is_fewest_falls_then_lowest_error_then_earliest():
    rows = [
        {"iteration": 50, "falls": 3, "seeds": 20, "e_track_cm": 1.0, "root_z_cm": 1.0},
        {"iteration": 100, "falls": 2, "seeds": 20, "e_track_cm": 2.0, "root_z_cm": 1.0},
        {"iteration": 150, "falls": 2, "seeds": 20, "e_track_cm": 1.5, "root_z_cm": 1.0},
        {"iteration": 200, "falls": 2, "seeds": 20, "e_track_cm": 1.5, "root_z_cm": 0.5},
    ]
    assert best_row(rows)["iteration"] == 150
    assert best_row(rows[:2])["iteration"] == 100
    with pytest.raises(ValueError):
        best_row([])


def test_read_rows_types_and_a_table_from_before_the_flight_column(tmp_path):
    table = tmp_path / "checkpoints.csv"
    table.write_text("iteration,falls,seeds,e_track_cm,root_z_cm,flight_s\n50,4,20,1.25,0.5,0.125\n100,2,20,1.0,0.4,\n")
    unrecorded = {"first_seed": None, "duration_s": None, "judged_with": None, "checkpoint_sha256": None}  # tables from before those columns
    assert read_rows(table) == [{"iteration": 50, "falls": 4, "seeds": 20, "e_track_cm": 1.25, "root_z_cm": 0.5, "flight_s": 0.125, **unrecorded},
                                {"iteration": 100, "falls": 2, "seeds": 20, "e_track_cm": 1.0, "root_z_cm": 0.4, "flight_s": None, **unrecorded}]
    table.write_text("iteration,falls,seeds,e_track_cm,root_z_cm\n50,4,20,1.25,0.5\n")  # written before flight_s
    assert read_rows(table) == [{"iteration": 50, "falls": 4, "seeds": 20, "e_track_cm": 1.25, "root_z_cm": 0.5, "flight_s": None, **unrecorded}]
    table.write_text("iteration,falls,seeds,e_track_cm,root_z_cm,flight_s,first_seed,duration_s,judged_with\n"
                     "50,4,20,1.25,0.5,,100,8.0,own\n")
    assert read_rows(table)[0] | {} == {"iteration": 50, "falls": 4, "seeds": 20, "e_track_cm": 1.25, "root_z_cm": 0.5,
                                        "flight_s": None, "first_seed": 100, "duration_s": 8.0, "judged_with": "own",
                                        "checkpoint_sha256": None}
    assert read_rows(tmp_path / "missing.csv") == []


def test_a_table_cell_that_is_not_a_number_is_an_input_error_naming_the_file(tmp_path):
    table = tmp_path / "checkpoints.csv"
    table.write_text("iteration,falls,seeds,e_track_cm,root_z_cm,flight_s\n50,4,20,1.25,0.5,0.125\n100,2,20,abc,0.4,\n")
    with pytest.raises(BCGInputError) as info:
        read_rows(table)
    assert str(info.value) == f"{table}: line 3: column 'e_track_cm' is 'abc', not a finite number"
    table.write_text("iteration,falls,seeds,e_track_cm,root_z_cm\n50,2,20,inf,0.5\n")  # was chosen as the worst, silently
    with pytest.raises(BCGInputError, match="line 2: column 'e_track_cm' is 'inf', not a finite number"):
        read_rows(table)
    table.write_text(f"iteration,falls,seeds,e_track_cm,root_z_cm\n{'9' * 400},2,20,1.0,0.5\n")  # an integer no float holds
    assert read_rows(table)[0]["iteration"] == int("9" * 400)
    table.write_text("iteration,falls,seeds,e_track_cm,root_z_cm\n50,2.5,20,1.0,0.5\n")
    with pytest.raises(BCGInputError, match="line 2: column 'falls' is '2.5', not an integer"):
        read_rows(table)


def test_an_older_table_gains_the_new_columns_and_its_unrecorded_rows_are_judged_again(tmp_path, monkeypatch):
    """A run resumed under a table written before ``flight_s`` and the judging columns: the table is
    rewritten with the new header; a row that did not record what it was judged under is evaluated
    again (best.json names one set of conditions for every row)."""
    import bcg_train.cli.evaluate as evaluate_cli
    import bcg_train.cli.export as export_cli

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "select").mkdir()
    for it in (50, 100):
        (run / "checkpoints" / f"{it:06d}.pkl").write_bytes(b"")
    table = run / "select" / "checkpoints.csv"
    table.write_text("iteration,falls,seeds,e_track_cm,root_z_cm\n50,4,20,1.25,0.5\n")

    def fake_eval(argv):
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "summary.json").write_text(json.dumps({"falls": 1, "seeds": 20, "tracking_error_cm_mean": 2.0,
                                                      "root_height_error_cm": {"mean": 1.0}, "longest_flight_s_mean": 0.097}))
        return 0

    monkeypatch.setattr(export_cli, "main", lambda argv: 0)
    monkeypatch.setattr(evaluate_cli, "main", fake_eval)
    assert main([str(run)]) == 0
    lines = table.read_text().splitlines()
    empty = hashlib.sha256(b"").hexdigest()  # the checkpoints' (empty) files
    assert lines == ["iteration,falls,seeds,e_track_cm,root_z_cm,flight_s,first_seed,duration_s,judged_with,checkpoint_sha256",
                     f"50,1,20,2.0,1.0,0.097,0,8.0,own,{empty}", f"100,1,20,2.0,1.0,0.097,0,8.0,own,{empty}"]
    assert not list((run / "select").glob("*.tmp"))
    assert json.loads((run / "select" / "best.json").read_text())["flight_s"] == 0.097


def test_bad_run_directory_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "no_run")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bcg-select-checkpoint: error:") and "no_run" in err and "\n" not in err
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "run"), "--every", "50"])
    assert exc.value.code == 2 and "no checkpoint at a multiple of 50" in capsys.readouterr().err


@pytest.mark.parametrize("option, value, problem", [
    ("--poll-s", "-1", "must be a finite number > 0, got '-1'"),
    ("--poll-s", "nan", "must be a finite number > 0, got 'nan'"),
    ("--duration", "nan", "must be a finite number > 0, got 'nan'"),
    ("--duration", "1e308", "must be at most 3600, got '1e308'"),
    ("--first-seed", "-1", "must be an integer >= 0, got '-1'"),
    ("--every", "0", "must be an integer >= 1, got '0'"),
])
def test_bad_numbers_are_argparse_errors_naming_the_option(tmp_path, capsys, monkeypatch, option, value, problem):
    import bcg_train.cli.select_checkpoint as select

    monkeypatch.setattr(select, "WATCH_START_TIMEOUT_S", 0.2)  # were it accepted: the wait for a run that never comes
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "never"), "--watch", option, value])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"bcg-select-checkpoint: error: argument {option}: {problem}"


def test_missing_judging_config_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "run"), "--train-config", str(tmp_path / "nope.yaml")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "nope.yaml" in err and "no such training config" in err and "\n" not in err


def test_watch_waits_for_the_run_directory_then_gives_up_in_one_line(tmp_path, capsys, monkeypatch):
    import threading

    import bcg_train.cli.select_checkpoint as select

    # created while it waits (bcg-train started at the same time): it gets past the check
    run = tmp_path / "late_run"
    monkeypatch.setattr(select, "WATCH_START_TIMEOUT_S", 5.0)
    def start_run():
        (run / "checkpoints").mkdir(parents=True)
        (run / "summary.json").write_text("{}")  # and ends at once, with no checkpoint

    threading.Timer(0.3, start_run).start()
    with pytest.raises(SystemExit) as exc:
        main([str(run), "--watch", "--poll-s", "0.05"])
    assert exc.value.code == 2
    (summary,) = [line for line in capsys.readouterr().err.splitlines() if line]
    assert "no checkpoint at a multiple of 50" in summary
    # never created: a one-line error naming the directory and the wait
    monkeypatch.setattr(select, "WATCH_START_TIMEOUT_S", 0.2)
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "never"), "--watch", "--poll-s", "0.05"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "never" in err and "no such run directory after 0.2 s" in err and "\n" not in err


def test_judging_config_reaches_every_evaluation_and_best_json(tmp_path, monkeypatch):
    """The wiring only: bcg-export and bcg-eval (our own CLIs, tested on their own) are replaced by
    recorders, so a checkpoint file need not hold networks."""
    import bcg_train.cli.evaluate as evaluate_cli
    import bcg_train.cli.export as export_cli

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for it in (50, 100):
        (run / "checkpoints" / f"{it:06d}.pkl").write_bytes(b"")
    judge = tmp_path / "judge.train.yaml"
    judge.write_text("task: {}\n")
    calls = []

    def fake_eval(argv):
        calls.append(argv)
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)  # bcg-eval writes into an existing folder too
        falls = 3 if "it000050" in out.name else 1
        (out / "summary.json").write_text(json.dumps({"falls": falls, "seeds": 20, "tracking_error_cm_mean": 1.0,
                                                      "root_height_error_cm": {"mean": 1.0}}))
        return 0

    monkeypatch.setattr(export_cli, "main", lambda argv: 0)
    monkeypatch.setattr(evaluate_cli, "main", fake_eval)
    assert main([str(run), "--train-config", str(judge)]) == 0
    assert len(calls) == 2 and all(c[c.index("--train-config") + 1] == str(judge) for c in calls)
    best = json.loads((run / "select" / "best.json").read_text())
    assert best["iteration"] == 100 and best["judged_with"] == str(judge)
    # without the flag each checkpoint is judged under its own config
    calls.clear()
    (run / "select" / "checkpoints.csv").unlink()
    for d in (run / "select").glob("it*_seeds*"):
        (d / "summary.json").unlink()
        d.rmdir()
    assert main([str(run)]) == 0
    assert len(calls) == 2 and not any("--train-config" in c for c in calls)
    assert json.loads((run / "select" / "best.json").read_text())["judged_with"] == "each checkpoint's own config"

    # run again under other seeds or another judging config, with the table kept: every row is
    # judged again (they were reused, and best.json named settings they were not judged under)
    for extra in (["--first-seed", "40", "--seeds", "50"], ["--train-config", str(judge)], []):
        calls.clear()
        assert main([str(run), *extra]) == 0
        assert len(calls) == 2, extra
        rows = read_rows(run / "select" / "checkpoints.csv")
        assert all(r["first_seed"] == (40 if extra[:1] == ["--first-seed"] else 0) for r in rows)
    calls.clear()
    assert main([str(run)]) == 0 and calls == []  # the same settings: nothing to judge again


@pytest.mark.parametrize("blocker", ["select", "select/checkpoints.csv", "select/best.json"])
def test_a_select_folder_or_table_blocked_is_one_line_and_exit_2(tmp_path, capsys, blocker):
    """``select`` a file, or ``select/checkpoints.csv`` or ``best.json`` a folder: was a traceback
    (FileExistsError, or IsADirectoryError after the evaluations)."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "000050.pkl").write_bytes(b"")
    if blocker == "select":
        (run / "select").write_text("")
    else:
        (run / blocker).mkdir(parents=True)
    with pytest.raises(SystemExit) as exc:
        main([str(run), "--every", "50"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bcg-select-checkpoint: error: {run / blocker}: ") and "\n" not in err, err


@pytest.mark.parametrize("content, problem", [
    (b"\xff\xfe\x00\x01junk", "not UTF-8 text (byte 0)"),
    (b"iteration,falls,seeds,e_track_cm,root_z_cm,flight_s\n50,,20,3.2,1.0,\n", "line 2: column 'falls' is blank"),
    (b"iteration,falls,seeds,e_track_cm,root_z_cm\n50,2,20,3.2\n", "line 2: column 'root_z_cm' is blank"),  # a short row
    (b"foo,bar\n1,2\n", "line 1: no column 'iteration' (header: foo,bar)"),
], ids=["not-utf8", "blank-cell", "short-row", "no-column"])
def test_a_table_that_is_not_the_selection_csv_is_one_line_naming_it(tmp_path, capsys, content, problem):
    """Tracebacks before: UnicodeDecodeError, or int(None) for a blank or missing required cell."""
    table = tmp_path / "run" / "select" / "checkpoints.csv"
    table.parent.mkdir(parents=True)
    table.write_bytes(content)
    with pytest.raises(BCGInputError) as info:
        read_rows(table)
    assert str(info.value) == f"{table}: {problem}"
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "run")])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == f"bcg-select-checkpoint: error: {table}: {problem}"


@pytest.mark.parametrize("extra", [["--seeds", "150"], ["--first-seed", "90"], ["--first-seed", "100", "--seeds", "5"]])
def test_selection_seeds_that_reach_the_held_out_report_seeds_are_refused(tmp_path, capsys, extra):
    """Checkpoints chosen on seeds bcg-eval reports on (100 on by default) give in-sample figures
    reported as held out."""
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "run"), *extra])
    assert exc.value.code == 2
    assert "reach into the held-out seeds bcg-eval reports on (100 on)" in capsys.readouterr().err


def test_watching_a_run_that_had_already_finished_returns(tmp_path, monkeypatch):
    """--watch waited for a summary.json written after it started: on a run that had finished
    before, it polled forever. A summary newer than every checkpoint means the run is over."""
    import os
    import threading

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "000050.pkl").write_bytes(b"50")
    (run / "summary.json").write_text("{}")
    old = os.stat(run / "checkpoints" / "000050.pkl").st_mtime - 3600  # both an hour old, the summary last
    os.utime(run / "checkpoints" / "000050.pkl", (old, old))
    os.utime(run / "summary.json", (old + 1, old + 1))

    _judge_standing(monkeypatch)
    done = []
    watcher = threading.Thread(target=lambda: done.append(main([str(run), "--watch", "--poll-s", "0.05"])), daemon=True)
    watcher.start()
    watcher.join(timeout=30)
    assert done == [0]
