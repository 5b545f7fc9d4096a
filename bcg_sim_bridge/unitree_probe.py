"""``python -m bcg_sim_bridge.unitree_probe``: a tiny ``unitree_sdk2py`` client of ``rt/lowstate``/``rt/lowcmd``.

Reads LowState_ (checks its CRC and ``mode_machine``), then sends ``--good`` sealed
default-pose commands and ``--bad`` commands with a corrupted CRC, and prints one JSON
line. Used by tests and by sim-to-sim's corrupted-CRC fault (it must run in its own
process: the SDK's channel factory is initialised once per process).
"""

from __future__ import annotations

import argparse
import json
import threading
import time

from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelPublisher, ChannelSubscriber
from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_

from bcg_robot.config import DEFAULT_ROBOT_CONFIG, load_robot_config
from bcg_robot.wire import UNITREE_COMMAND_TOPIC, UNITREE_STATE_TOPIC, LowCommand
from bcg_sim_bridge.unitree_codec import command_to_low_cmd, low_state_crc_ok


class _StateWatch:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.bad_crc = 0
        self.mode_machine = -1
        self.ticks: list[int] = []
        self.first = threading.Event()

    def __call__(self, msg: LowState_) -> None:
        ok = low_state_crc_ok(msg)
        with self.lock:
            self.count += 1
            self.bad_crc += not ok
            self.mode_machine = int(msg.mode_machine)
            self.ticks.append(int(msg.tick))
        self.first.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="unitree_probe", description=__doc__)
    parser.add_argument("--domain", type=int, default=1)
    parser.add_argument("--interface", default="lo")
    parser.add_argument("--good", type=int, default=0, help="sealed default-pose commands to send")
    parser.add_argument("--bad", type=int, default=0, help="commands with a corrupted CRC to send")
    parser.add_argument("--rate", type=float, default=100.0, help="commands per second")
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to wait for the first state")
    args = parser.parse_args(argv)
    ChannelFactoryInitialize(args.domain, args.interface)
    robot = load_robot_config(DEFAULT_ROBOT_CONFIG)
    watch = _StateWatch()
    sub = ChannelSubscriber(UNITREE_STATE_TOPIC, LowState_)
    sub.Init(watch, 1)
    pub = ChannelPublisher(UNITREE_COMMAND_TOPIC, LowCmd_)
    pub.Init()
    if not watch.first.wait(args.wait):
        print(json.dumps({"error": "no rt/lowstate received"}), flush=True)
        return 1
    good = command_to_low_cmd(LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array))
    bad = command_to_low_cmd(LowCommand.position(robot.default_q + 0.5, robot.kp_array, robot.kd_array))
    bad.crc ^= 0x5A5A5A5A
    period = 1.0 / args.rate
    due = time.monotonic()
    for msg in [good] * args.good + [bad] * args.bad:
        pub.Write(msg)
        due += period
        time.sleep(max(0.0, due - time.monotonic()))
    time.sleep(0.2)  # let the last samples leave before the participant goes
    with watch.lock:
        ticks = watch.ticks
        report = {
            "states": watch.count, "state_bad_crc": watch.bad_crc, "mode_machine": watch.mode_machine,
            "tick_advancing": len(ticks) > 1 and ticks[-1] > ticks[0], "sent_good": args.good, "sent_bad": args.bad,
        }
    print(json.dumps(report), flush=True)
    sub.Close()
    pub.Close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
