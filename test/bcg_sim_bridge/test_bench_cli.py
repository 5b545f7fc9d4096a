"""bcg-bench-bridge and bcg-bench-node: a bad argument is a one-line error and exit 2, before any process starts."""

import pytest

from bcg_sim_bridge.cli import bench_bridge, bench_node


@pytest.mark.parametrize("option", ["--sim-seconds", "--state-hz"])
@pytest.mark.parametrize("value", ["0", "nan"])
def test_bench_bridge_refuses_a_simulated_time_or_state_rate_that_is_not_positive(option, value, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        bench_bridge.main([option, value, "--no-sim2sim", "--out", str(tmp_path / "bench.json")])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"bcg-bench-bridge: error: argument {option}: must be a finite number > 0, got '{value}'")
    assert not (tmp_path / "bench.json").exists()


def test_bench_bridge_refuses_an_out_it_cannot_write_before_measuring(tmp_path, capsys):
    """--out was created only after minutes of measurement: a directory there, or a file in its path, was a traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    for out, problem in ((tmp_path, "is a directory (--out names the file to write)"),
                         (blocker / "bench.json", "exists and is not a directory (--out)")):
        with pytest.raises(SystemExit) as exc:
            bench_bridge.main(["--no-sim2sim", "--out", str(out)])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and problem in err, err


@pytest.mark.parametrize("option", ["--duration", "--state-rate"])
@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_bench_node_refuses_a_duration_or_state_rate_that_is_not_positive(option, value, capsys):
    with pytest.raises(SystemExit) as exc:
        bench_node.parse_args([option, value])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"bcg-bench-node: error: argument {option}: must be a finite number > 0, got '{value}'")


@pytest.mark.parametrize("value", ["-1", "233"])
def test_bench_node_refuses_an_sdk_domain_no_dds_has(value, capsys):
    with pytest.raises(SystemExit) as exc:
        bench_node.parse_args(["--sdk-domain", value])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"bcg-bench-node: error: argument --sdk-domain: must be a DDS domain id 0-232, got '{value}'")


def test_bench_node_out_dir_that_is_a_file_is_one_line_and_exit_2(tmp_path, capsys):
    existing = tmp_path / "bench_node_out"
    existing.write_text("")
    with pytest.raises(SystemExit) as exc:
        bench_node.main(["--out-dir", str(existing), "--duration", "1"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == f"bcg-bench-node: error: {existing}: exists and is not a directory (--out-dir)"


@pytest.mark.parametrize("argv, message", [
    (["--sim-seconds", "1e308"], "argument --sim-seconds: must be at most 3600, got '1e308'"),  # OverflowError
    (["--sim-seconds", "1e-9"], "--sim-seconds 1e-09 is under 0.1 s"),  # ZeroDivisionError: no step to time
])
def test_bench_bridge_refuses_a_simulated_time_it_cannot_measure(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        bench_bridge.main([*argv, "--no-sim2sim", "--out", str(tmp_path / "bench.json")])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"bcg-bench-bridge: error: {message}"


def test_bench_node_refuses_a_duration_past_an_hour(capsys):
    """1e308 s started bridge, node and sentinel, then timed for ever."""
    with pytest.raises(SystemExit) as exc:
        bench_node.parse_args(["--duration", "1e308"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "bcg-bench-node: error: argument --duration: must be at most 3600, got '1e308'"
