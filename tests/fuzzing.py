"""The one way the suite's Hypothesis fuzz tests are bounded: FUZZ_SCALE multiplies every test's number of
examples, CI derandomizes them (the same examples on every run), and nothing is kept between runs."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

SCALE = float(os.environ.get("FUZZ_SCALE", "1"))


def fuzz_settings(n: int, *, shrink: bool = True) -> settings:
    """`n` examples (times FUZZ_SCALE); shrink=False shows a failure as found, for tests whose examples are
    whole pages (shrinking them takes minutes)."""
    phases = list(Phase) if shrink else [Phase.explicit, Phase.generate]
    return settings(
        max_examples=max(1, int(n * SCALE)),
        deadline=None,
        derandomize=bool(os.environ.get("CI")),
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
        phases=phases,
    )
