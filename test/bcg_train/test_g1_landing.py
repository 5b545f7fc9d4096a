"""The G1 landing problem (bcg-bench-gradients' task): built without compiling anything.
Its gradients are measured by running the benchmark (README); SHAC + BCG through the G1's
stiff contact is compiled and run by test_gpu_train_script."""

import numpy as np

from bcg_robot.config import load_robot_config
from bcg_train.tasks.g1_landing import PRESETS, build_landing_problem


def test_the_landing_problem_drops_the_g1_from_above_its_standing_height_with_one_model_per_preset():
    problem = build_landing_problem(load_robot_config(), drop_height=0.05)
    sim = problem.sim
    assert sim.n_substeps == 4 and sim.mj_model.nu == 29
    assert 0.5 < problem.standing_height < 1.0
    np.testing.assert_allclose(sim.initial_qpos[2], problem.standing_height + 0.05)
    # the presets differ only in the contact parameters passed to the one compiled program
    assert set(problem.contact_params) == set(PRESETS)
    timeconst = {name: solref[:, 0] for name, (solref, _) in problem.contact_params.items()}
    feet = timeconst["stiff"] != timeconst["soft"]
    assert feet.any() and (timeconst["stiff"][feet] < timeconst["default"][feet]).all()
    assert (timeconst["default"][feet] < timeconst["soft"][feet]).all()


def test_the_landing_problem_takes_the_train_models_newton_iterations():
    from bcg_robot.model import TRAIN_SOLVER_ITERATIONS

    cfg = load_robot_config()
    assert build_landing_problem(cfg, drop_height=0.05).sim.mj_model.opt.iterations == TRAIN_SOLVER_ITERATIONS
    assert build_landing_problem(cfg, drop_height=0.05, solver_iterations=3).sim.mj_model.opt.iterations == 3
