"""Jump clip variants (landing crouch depth and stand-up time), written for playback baselines."""
import functools, sys
from pathlib import Path
from bcg_robot.config import load_robot_config
from bcg_robot.model import build_model
from bcg_train.motion import synthesize as S
from bcg_train.motion.loader import write_motion_csv

VARIANTS = {
    "A_land15_stand06": S.JumpProfile(),
    "B_land10_stand06": S.JumpProfile(land_drop=0.10),
    "C_land10_hold03_stand09": S.JumpProfile(land_drop=0.10, hold_s=0.3, stand_s=0.9),
    "D_land15_hold03_stand09": S.JumpProfile(hold_s=0.3, stand_s=0.9),
    "E_land08_hold03_stand09": S.JumpProfile(land_drop=0.08, hold_s=0.3, stand_s=0.9),
}
cfg = load_robot_config(); model = build_model(cfg, "train")
for name, prof in VARIANTS.items():
    S.MOTIONS["jump"] = (3.0, functools.partial(S.jump, profile=prof), prof.flight_height)
    clip = S.synthesize("jump", cfg, model)
    write_motion_csv(Path(sys.argv[1]) / f"{name}.csv", clip, comment=f"variant {name}: {prof}")
    print(name, f"stand-up ends {prof.stand_start + prof.stand_s:.3f} s, brake {prof.brake_accel:.1f} m/s^2")
