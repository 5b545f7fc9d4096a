"""``python -m bcg_sim_bridge.unitree_probe``: a second commander for tests and fault injection.

``--transport unitree_sdk`` (default): a tiny ``unitree_sdk2py`` client of
``rt/lowstate``/``rt/lowcmd``. It reads LowState_ (checks its CRC and ``mode_machine``),
then sends ``--good`` sealed default-pose commands and ``--bad`` commands with a
corrupted CRC, packed by :mod:`bcg_robot.unitree_hg`. ``--transport ros2``: an rclpy node (``bcg_probe``) that publishes
``--good`` default-pose commands on the bridge's ``lowcmd`` topic. Neither stamps its
commands: to the policy node and the sentinel it is a foreign writer. ``--record S``
(unitree_sdk, nothing sent): every ``rt/lowcmd`` sample of the next S seconds with its
writer's source timestamp and stamp, so a test can tell when each writer *wrote* from when
the bridge received. ``--armed``: start up and connect, then send only once a line arrives
on stdin, so a scenario can start the probe before the run and inject on cue. With
``--record``, ``--armed`` prints ``recording`` once the reader exists and stops recording at
a line on stdin (or its close), S then being the most it records: the caller, not a guessed
duration, decides when the recording covers what it needs.

The report is one JSON object written to ``--result`` (atomically: a file that exists is
complete), and also printed as the last stdout line. Read the file: the SDK's reader
threads may print to stdout after the report (``[Reader] take sample error`` while a
reader closes). It must run in its own process: the SDK's channel factory is
initialised once per process.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import threading
import time
from pathlib import Path

from bcg_robot.config import DEFAULT_ROBOT_CONFIG, load_robot_config
from bcg_robot.wire import (TRANSPORT_ROS2, TRANSPORT_UNITREE_SDK, TRANSPORTS, UNITREE_COMMAND_TOPIC,
                            UNITREE_STATE_TOPIC, LowCommand)


class _StateWatch:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.bad_crc = 0
        self.mode_machine = -1
        self.ticks: list[int] = []
        self.first = threading.Event()

    def __call__(self, msg) -> None:
        from bcg_robot.unitree_hg import crc_ok

        ok = crc_ok(msg)
        with self.lock:
            self.count += 1
            self.bad_crc += not ok
            self.mode_machine = int(msg.mode_machine)
            self.ticks.append(int(msg.tick))
        self.first.set()


def _paced(messages: list, rate: float, write) -> float | None:
    """Write at ``rate``; returns the time.monotonic() of the first write (system-wide clock)."""
    period = 1.0 / rate
    due = first = time.monotonic()
    for msg in messages:
        write(msg)
        due += period
        time.sleep(max(0.0, due - time.monotonic()))
    return first if messages else None


def _go(args) -> bool:
    """With ``--armed``: block until the caller writes a line on stdin (its fault time), so the
    process's start-up (interpreter, imports, DDS participant) is over before the injection and
    does not take the CPU from the processes under test while they run. False on end of file."""
    return not args.armed or bool(sys.stdin.readline())


def _run_unitree(args, robot) -> dict:
    from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelPublisher, ChannelSubscriber
    from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_

    from bcg_robot.unitree_hg import pack_low_cmd

    ChannelFactoryInitialize(args.domain, args.interface)
    pub = ChannelPublisher(UNITREE_COMMAND_TOPIC, LowCmd_)
    pub.Init()
    if not _go(args):
        return {"error": "stdin closed before the go line (--armed)"}
    watch = _StateWatch()
    # this process writes rt/lowcmd and listens to rt/lowstate only: no listener on a topic it writes
    sub = ChannelSubscriber(UNITREE_STATE_TOPIC, LowState_)
    sub.Init(watch, 1)
    if not watch.first.wait(args.wait):
        return {"error": "no rt/lowstate received"}
    with watch.lock:
        mode_machine = watch.mode_machine  # copied from the state, as a real client does
    good = pack_low_cmd(LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array), mode_machine)
    bad = pack_low_cmd(LowCommand.position(robot.default_q + 0.5, robot.kp_array, robot.kd_array), mode_machine)
    bad.crc ^= 0x5A5A5A5A
    first = _paced([good] * args.good + [bad] * args.bad, args.rate, pub.Write)
    time.sleep(0.2)  # let the last samples leave before the participant goes
    with watch.lock:
        ticks = watch.ticks
        return {
            "states": watch.count, "state_bad_crc": watch.bad_crc, "mode_machine": watch.mode_machine,
            "tick_advancing": len(ticks) > 1 and ticks[-1] > ticks[0], "sent_good": args.good, "sent_bad": args.bad,
            "first_sent_at": first,
        }


def _run_record(args) -> dict:
    """Every ``rt/lowcmd`` sample written during ``args.record`` seconds: ``[source_timestamp_s,
    role, writer id, crc_ok]`` each (source timestamps are the writers' CLOCK_REALTIME).

    No listener: a reader with a deep history is polled, so samples wait in the reader's
    cache while this process is descheduled and none is lost to a slow poll."""
    from cyclonedds.domain import DomainParticipant
    from cyclonedds.qos import Policy, Qos
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic
    from unitree_sdk2py.core.channel import ChannelFactoryInitialize
    from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_

    from bcg_robot.unitree_hg import crc_ok
    from bcg_robot.wire import writer_from_stamp

    ChannelFactoryInitialize(args.domain, args.interface)  # the SDK's DDS configuration (interface) for this domain
    participant = DomainParticipant(args.domain)
    reader = DataReader(participant, Topic(participant, UNITREE_COMMAND_TOPIC, LowCmd_),
                        Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(100_000)))
    samples = []
    started = time.time()
    end = time.monotonic() + args.record
    if args.armed:
        print("recording", flush=True)
    while True:
        last = time.monotonic() >= end or (args.armed and _cue_arrived())
        for msg in reader.take(4096):
            if msg.sample_info.valid_data:
                writer = writer_from_stamp(msg.reserve)
                samples.append([msg.sample_info.source_timestamp * 1e-9, writer.role, writer.ident, crc_ok(msg)])
        if last:
            break
        time.sleep(0.05)  # a tool's poll, not a control loop: the samples wait in the reader
    return {"recorded_from": started, "recorded_until": time.time(), "recorded_s": args.record, "samples": samples}


def _cue_arrived() -> bool:
    """A line (or the close) waiting on stdin, without blocking: ``--armed --record``'s stop cue."""
    return bool(select.select([sys.stdin], [], [], 0.0)[0])


def _run_ros2(args, robot) -> dict:
    import rclpy
    from std_msgs.msg import Float64MultiArray

    from bcg_policy_node.interfaces.ros2_interface import COMMAND_QOS, command_message, created_publisher_gid, gid_text, publisher_gids
    from bcg_robot.wire import COMMAND_TOPIC

    rclpy.init()
    # no parameter services or rosout publisher: under the policy node's own name they would clash with its own
    node = rclpy.create_node(args.node_name, start_parameter_services=False, enable_rosout=False)
    try:
        before = publisher_gids(node, COMMAND_TOPIC)
        pub = node.create_publisher(Float64MultiArray, COMMAND_TOPIC, COMMAND_QOS)
        gid = created_publisher_gid(node, COMMAND_TOPIC, before)
        deadline = time.monotonic() + args.wait
        while pub.get_subscription_count() < args.subscribers:
            if time.monotonic() > deadline:
                return {"error": f"{pub.get_subscription_count()} subscribers on '{COMMAND_TOPIC}', waited for "
                                 f"{args.subscribers}"}
            time.sleep(0.05)
        if not _go(args):
            return {"error": "stdin closed before the go line (--armed)"}
        good = command_message(LowCommand.position(robot.default_q, robot.kp_array, robot.kd_array))
        first = _paced([good] * args.good, args.rate, pub.publish)
        time.sleep(0.2)
        return {"sent_good": args.good, "sent_bad": 0, "subscribers": pub.get_subscription_count(), "first_sent_at": first,
                # as gid_text prints it: a receiver that has not yet learnt this node's name can only name the GID
                "publisher_gid": gid_text(gid) if gid is not None else ""}
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def write_result(path: Path, report: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report))
    os.replace(tmp, path)


def read_result(path: Path) -> dict:
    """The probe's report, or ``{"harness_error": ...}`` when it left none."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        return {"harness_error": f"probe left no report in {path}: {err}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="unitree_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=TRANSPORTS, default=TRANSPORT_UNITREE_SDK)
    parser.add_argument("--domain", type=int, default=1, help="unitree_sdk DDS domain (ros2: ROS_DOMAIN_ID)")
    parser.add_argument("--interface", default="lo")
    parser.add_argument("--node-name", default="bcg_probe",
                        help="ros2: the probe's node name (the policy node's own name: a second node started by mistake)")
    parser.add_argument("--good", type=int, default=0, help="sealed default-pose commands to send")
    parser.add_argument("--bad", type=int, default=0, help="commands with a corrupted CRC to send (unitree_sdk)")
    parser.add_argument("--rate", type=float, default=100.0, help="commands per second")
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to wait for the first state / a subscriber")
    parser.add_argument("--subscribers", type=int, default=1,
                        help="ros2: wait until this many subscribers (bridge, node, sentinel) match before sending")
    parser.add_argument("--record", type=float, default=0.0,
                        help="unitree_sdk: send nothing, record every rt/lowcmd sample for this many seconds")
    parser.add_argument("--result", default="", help="write the JSON report to this file")
    parser.add_argument("--armed", action="store_true",
                        help="connect, then wait for a line on stdin before sending (start early, inject on cue)")
    args = parser.parse_args(argv)
    if args.record > 0 and args.transport != TRANSPORT_UNITREE_SDK:
        parser.error("--record reads rt/lowcmd over unitree_sdk: use it with --transport unitree_sdk")
    robot = load_robot_config(DEFAULT_ROBOT_CONFIG)
    if args.record > 0:
        report = _run_record(args)
    else:
        report = (_run_ros2 if args.transport == TRANSPORT_ROS2 else _run_unitree)(args, robot)
    if args.result:
        write_result(Path(args.result), report)
    print(json.dumps(report), flush=True)
    return 1 if "error" in report else 0


if __name__ == "__main__":
    raise SystemExit(main())
