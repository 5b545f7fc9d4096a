"""The claim's outputs from synthetic results: the JSON shape, thresholds, ratio, table and plot."""

import json

import numpy as np
import pytest

from bcg_train.claim.protocol import METHOD_NAMES, ClaimProtocol, method_by_name
from bcg_train.claim.report import claim_json, details_json, first_below, plot, table
from bcg_train.claim.runner import MethodResult, SeedResult, gradient_variance
from bcg_train.evaluate.hopper_eval import HopperScore

METHOD_KEYS = {"seeds", "env_steps_to_threshold", "wall_s_to_threshold", "final_task_error", "transfer_falls",
               "transfer_task_error", "gradient_variance", "bundled_fraction"}


def score(err, falls=0, pen=0.004):
    return HopperScore(falls=falls, episodes=1, task_error=err, cycles=10, foot_penetration_m=pen)


def curve(errors, steps_per_point):
    return [{"env_steps": float(i * steps_per_point), "wall_s": float(i), "task_error": e, "falls": 0.0} for i, e in enumerate(errors)]


def synthetic():
    results = []
    for name, errs, falls in [
        ("shac_bcg_stiff", [0.13, 0.05, 0.02, 0.01], 0),
        ("shac_stiff", [0.13, 0.12, 0.12, 0.11], 2),
        ("shac_soft", [0.13, 0.04, 0.02, 0.02], 4),
        ("ppo_stiff", [0.13, 0.10, 0.06, 0.025], 1),
    ]:
        step = 10_000 if name == "ppo_stiff" else 1_000
        seeds = [SeedResult(s, curve(errs, step), score(errs[-1]), score(errs[-1] + 0.01, int(s < falls), pen=0.002), 0.1) for s in range(5)]
        results.append(MethodResult(method_by_name(name), seeds, compile_s=1.0, gradient_variance=None if name == "ppo_stiff" else 2.0))
    return results


def test_claim_json_has_exactly_the_published_shape_and_the_right_figures():
    protocol = ClaimProtocol()
    claim = claim_json(synthetic(), protocol)
    assert set(claim) == {"task", "protocol", "threshold", "methods", "ppo_to_shac_bcg_env_steps"}
    assert set(claim["methods"]) == set(METHOD_NAMES)
    for entry in claim["methods"].values():
        assert set(entry) == METHOD_KEYS
    bcg, stiff, soft, ppo = (claim["methods"][n] for n in METHOD_NAMES)
    assert bcg["env_steps_to_threshold"] == [2000] * 5 and bcg["wall_s_to_threshold"] == [2.0] * 5
    assert stiff["env_steps_to_threshold"] == [None] * 5
    assert ppo["env_steps_to_threshold"] == [30_000] * 5
    assert claim["ppo_to_shac_bcg_env_steps"] == pytest.approx(15.0)
    assert (bcg["transfer_falls"], stiff["transfer_falls"], soft["transfer_falls"]) == (0, 2, 4)
    assert bcg["bundled_fraction"] == pytest.approx(0.1) and stiff["bundled_fraction"] is None  # only BCG bundles
    assert ppo["gradient_variance"] is None and bcg["gradient_variance"] == 2.0
    json.dumps(claim, allow_nan=False)  # strict JSON: no NaN anywhere
    # one SHAC+BCG seed that never reached the threshold: no ratio from the four that did
    results = synthetic()
    bcg_result = results[0]
    never = [0.13, 0.12, 0.12, 0.12]
    bcg_result.seeds[4] = SeedResult(4, curve(never, 1_000), score(never[-1]), score(never[-1]), 0.1)
    partial = claim_json(results, protocol)
    assert partial["methods"]["shac_bcg_stiff"]["env_steps_to_threshold"] == [2000] * 4 + [None]
    assert partial["ppo_to_shac_bcg_env_steps"] is None


def test_first_below_skips_undefined_points():
    c = curve([float("nan"), 0.04, 0.03], 100)
    assert first_below(c, 0.03) == (200, 2.0)
    assert first_below(c, 0.01) == (None, None)


def test_a_point_with_a_fall_does_not_reach_the_threshold():
    """The task error averages completed hop cycles, those before a fall too: a point that hopped
    well and then fell read as reaching the threshold."""
    c = curve([0.13, 0.02, 0.02], 100)
    c[1]["falls"] = 1.0
    assert first_below(c, 0.03) == (200, 2.0)


def test_details_table_and_plot(tmp_path):
    results = synthetic()
    claim = claim_json(results, ClaimProtocol())
    details = details_json(results)
    assert details["shac_bcg_stiff"]["seeds"][0]["penetration_difference_mm"] == pytest.approx(2.0)
    text = table(claim, results)
    assert "shac_stiff" in text and "15.0x" in text and "0/5" in text and "4/5" in text
    png = plot(results, claim, tmp_path / "claim.png")
    import matplotlib.image

    image = matplotlib.image.imread(png)
    assert image.shape[1] > image.shape[0] > 300 and np.unique(image.reshape(-1, image.shape[-1]), axis=0).shape[0] > 20


def test_gradient_variance_uses_finite_samples_only():
    samples = np.array([[1.0, 0.0], [3.0, 2.0], [np.inf, 0.0]])
    variance, finite = gradient_variance(samples)
    assert finite == 2 and variance == pytest.approx(2.0 + 2.0)
    assert gradient_variance(samples[2:]) == (None, 0)


def test_bcg_claim_refuses_an_output_folder_that_is_a_file_in_one_line(tmp_path, capsys, monkeypatch):
    import bcg_train.claim.runner as runner
    from bcg_train.cli.claim import main

    monkeypatch.setattr(runner, "run_method", lambda *a: pytest.fail("trained before checking --out"))
    (tmp_path / "taken").write_text("")
    with pytest.raises(SystemExit) as exit_:
        main(["--out", str(tmp_path / "taken"), "--seeds", "1"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and err.splitlines() == [f"bcg-claim: error: {tmp_path / 'taken'}: exists and is not a directory (--out)"]
