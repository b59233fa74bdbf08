"""Simulation back-ends (MuJoCo, the optional ``sim`` extra). ``import wbc`` never imports them:
``from wbc.sim.mujoco import MujocoSim``."""
