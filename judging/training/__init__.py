"""How2Score as an RL reward and training runs watched (paper §6, §E.4, §7; issue #32): the reward config,
the reward service behind POST /api/reward/, the runs that collect every call, and the statistics that watch
them for length gaming."""
