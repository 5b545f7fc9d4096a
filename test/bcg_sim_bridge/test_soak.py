"""The soak's figures (pure) and the probe's result file."""

import numpy as np

from bcg_sim_bridge.sim2sim.soak import memory_growth_mb, rss_mb, soak_markdown
from bcg_sim_bridge.unitree_probe import read_result, write_result


def test_memory_growth_compares_the_last_tenth_with_the_tenth_after_warm_up():
    t = np.arange(0.0, 1000.0, 1.0)
    flat = np.full_like(t, 300.0)
    flat[:20] = 250.0  # start-up growth inside the warm-up does not count
    assert memory_growth_mb(t, flat) == 0.0
    leaking = 300.0 + 0.05 * t  # 50 MB over the run
    growth = memory_growth_mb(t, leaking)
    assert 40.0 < growth < 50.0
    assert np.isnan(memory_growth_mb(t[:5], flat[:5]))


def test_rss_of_this_process_and_of_none():
    import os

    assert rss_mb(os.getpid()) > 10.0
    assert rss_mb(2**22 + 12345) is None


def test_probe_result_file_round_trip_and_a_missing_report_is_a_harness_error(tmp_path):
    path = tmp_path / "probe.json"
    assert "harness_error" in read_result(path)
    write_result(path, {"sent_bad": 20})
    assert read_result(path) == {"sent_bad": 20} and not (tmp_path / "probe.json.tmp").exists()
    path.write_text('{"sent_bad": 2')  # a torn write is reported, never parsed as a result
    assert "harness_error" in read_result(path)


def test_soak_table_names_failures():
    result = {"interface": "ros2", "passed": False, "ran_s": 60.0, "ticks": 3000, "missed_deadlines": 2,
              "period_max_ms": 55.0, "jitter_ms": {"p99": 0.4}, "latency_ms": {"p99": 1.1}, "trips": [],
              "sentinel_takeovers": 0, "memory": {"bridge": {"growth_mb": 1.0}, "policy": {"growth_mb": 2.0},
                                                  "sentinel": {"growth_mb": 0.5}},
              "cpu_share": {"bridge": 0.5, "policy": 0.1, "sentinel": 0.05}, "error": ""}
    text = soak_markdown([result], {"soak_s": 60})
    row = next(line for line in text.splitlines() if line.startswith("| ros2"))
    assert "FAIL" in row and "| 2 |" in row and "1.0 / 2.0 / 0.5" in row and "50 % / 10 % / 5 %" in row
