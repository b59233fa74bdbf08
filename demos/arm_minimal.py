"""The smallest complete example: a torque-controlled Panda in MuJoCo whose hand tracks a circle.

One frame task (the hand: position on a vertical circle of 10 cm at 0.5 Hz, orientation held), a
light posture task for the redundancy, the controller's default limits (torques, joint positions
and velocities from the URDF), 5 s at 1 kHz. Prints the tracking error and the control step time.
``demos/arm_task_space.py`` is the full version (plots, a classical OSC side by side).
"""

from __future__ import annotations

import time

import numpy as np

import wbc
from wbc import robots, tasks
from wbc.command_line import docstring_parser
from wbc.sim.mujoco import MujocoSim

docstring_parser(__doc__).parse_args()  # --help; no options (arm_task_space.py has them)

panda = robots.load("panda")
model, q = panda.model, panda.q0
hand = tasks.FrameTask("panda_hand_tcp", kp=400.0)  # 6D pose; kd = 2√kp
posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)  # the redundancy: stay near q0
posture.set_target(q)
controller = wbc.WholeBodyController(model, [hand, posture])  # default limits: torque, position, velocity
sim = MujocoSim(model)  # torques clamped to the URDF's effort limits, as the drives would
sim.reset(q)

T0 = wbc.frame_placement(model, q, "panda_hand_tcp")  # (4, 4) world placement of the hand
radius, w = 0.1, 2 * np.pi * 0.5  # m, rad/s
errors, step_times = [], []
for _ in range(5000):  # 5 s at 1 kHz
    t = sim.time
    c, s = np.cos(w * t), np.sin(w * t)
    target = T0.copy()
    target[1:3, 3] += radius * np.array([c - 1.0, s])  # a circle in the y-z plane through the start
    velocity = np.array([0.0, -radius * w * s, radius * w * c, 0.0, 0.0, 0.0])
    acceleration = np.array([0.0, -radius * w * w * c, -radius * w * w * s, 0.0, 0.0, 0.0])
    hand.set_target(target, velocity, acceleration)

    q, v = sim.get_state()
    errors.append(np.linalg.norm(wbc.frame_placement(model, q, "panda_hand_tcp")[0:3, 3] - target[0:3, 3]))
    t0 = time.perf_counter()
    command = controller.step(q, v)  # compiles on the first call (seconds), then microseconds
    step_times.append(time.perf_counter() - t0)
    sim.set_torques(command.tau)
    sim.step()

errors_mm = 1e3 * np.array(errors[1000:])  # after the first second
print(f"hand position error over 1-5 s: RMS {np.sqrt(np.mean(errors_mm**2)):.3f} mm, max {errors_mm.max():.3f} mm")
print(f"control step: median {1e6 * np.median(step_times[1:]):.0f} µs (first, compiling: {step_times[0]:.1f} s)")
