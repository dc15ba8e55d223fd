"""The human-calibrated How2Score in simulation (issue #20): seeded worlds with a known human truth, in which
a judge agrees with the humans ~80 % of the time with errors that differ by class and by topic.

    .venv/bin/python benchmarks/calibration_sim.py [--worlds 1000] [--seed 0] [--n 200] [--N 7000]
        [--mix 0.8] [--append-doc]

Each world: N examples over 8 topics (shares drawn per world); per topic a human share of "no critical
failure" drawn in [0.35, 0.85] and the human label Y of every example drawn from it; the judge's label
keeps Y with a per-topic sensitivity (on Y = 1, around 0.88) and specificity (on Y = 0, around 0.68), each
shifted per topic by +-0.08, so its bias differs by topic and by generator. The truth is the share of
Y = 1 over the world's N examples (what annotators would say on all of them); n of the examples are drawn
uniformly without replacement and get their human label; the judge's labels are known on all N.

Reported over the worlds: the coverage of the PPI++ 95 % interval (h2e_site.stats.calibration.ppi_arrays,
power
tuned, judge labels on all N) and of the classical PPI one (lam = 1); the coverage of the human truth by the
judge-only Wilson interval on N; the share of worlds where the PPI++ width is at most the human-only Wilson
width on the n labels, the mean and the range of that ratio; the mean lam and effective number of human
labels. Also a sample stratified by the judge's label (n / 2 among the examples it passes, n / 2 among those
it fails, inclusion probabilities known): the coverage of the weighted PPI++ interval, of the same estimate
ignoring the weights, and its width against the uniform sample's. Computed in chunks of worlds with numpy
(1,000 worlds in about a second).

Routing (issue #20 item 3; "routing" in the output): other worlds (routing_worlds), in which a second judge
(or a re-run) disagrees with the first on ~29 % of the examples and the first judge's errors concentrate there
(right ~55 % where the two disagree, ~90 % where they agree, ~80 % overall, shifted by class and topic). At
the same n: a uniform sample (PPI++, unweighted) against a routed one, drawn with
h2e_site.stats.sampling.disagreement_probabilities (uncertainty judge_uncertainty of the two verdicts, --mix
the
uniform share) and systematic_pps, estimated as the app does
(annotation.kinds.critical_failures.calibration.calibrated.score_of: over the design
strata, the distinct inclusion probabilities, by h2e_site.stats.calibration.design_stratified_score); the same
routed
sample weighted by 1 / pi instead (the Hajek estimate, ppi-python's weighted one: for comparison); and two
rounds (n / 2 uniform, then n / 2 routed; pi = inclusion_after_rounds). About 15 s for 1,000 worlds (the draws
are h2e_site.stats.sampling's own, in Python). --append-doc adds the run to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results_doc import insert_into_section  # noqa: E402
from h2e_site.stats.calibration import (  # noqa: E402
    StratumLabels,
    calibrated_score,
    design_stratified_score,
    ppi_arrays,
    probability_levels,
    z_value,
)
from h2e_site.stats.sampling import (  # noqa: E402
    MIX,
    disagreement_probabilities,
    inclusion_after_rounds,
    judge_uncertainty,
    systematic_pps,
)

TOPICS = 8
HEADING = "## Human-calibrated How2Score in simulation (issue #20)"
Array = NDArray[np.float64]


def wilson(successes: Array, n: int, z: float) -> tuple[Array, Array]:
    """The Wilson score interval of each row's share (h2e_site.stats.wilson_interval, vectorised)."""
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return np.maximum(0.0, centre - half), np.minimum(1.0, centre + half)


def worlds(rng: np.random.Generator, count: int, big_n: int) -> tuple[Array, Array]:
    """count worlds of big_n examples: the human labels and the judge's labels, each (count, big_n)."""
    shares = rng.dirichlet(np.full(TOPICS, 2.0), size=count)
    topic = (rng.random((count, big_n))[:, :, None] > np.cumsum(shares, axis=1)[:, None, :]).sum(axis=2)
    topic = np.minimum(topic, TOPICS - 1)
    human_share = rng.uniform(0.35, 0.85, size=(count, TOPICS))
    sensitivity = 0.88 + rng.uniform(-0.08, 0.08, size=(count, TOPICS))
    specificity = 0.68 + rng.uniform(-0.08, 0.08, size=(count, TOPICS))
    pick = np.take_along_axis
    human = (rng.random((count, big_n)) < pick(human_share, topic, axis=1)).astype(np.float64)
    keeps = np.where(human == 1, pick(sensitivity, topic, axis=1), pick(specificity, topic, axis=1))
    judge = np.where(rng.random((count, big_n)) < keeps, human, 1 - human)
    return human, judge


def judge_stratified_sample(rng: np.random.Generator, judge: Array, n: int) -> tuple[NDArray[np.intp], Array]:
    """n / 2 examples drawn uniformly among those the judge passes and n / 2 among those it fails: the items
    (count, n) and their inverse inclusion probabilities N_s / (n / 2)."""
    half = n // 2
    picks, weights = [], []
    for label, size in ((1.0, half), (0.0, n - half)):
        in_stratum = judge == label
        stratum_n = in_stratum.sum(axis=1)
        if (stratum_n < size).any():
            raise SystemExit(f"a world has fewer than {size} examples the judge labels {label:g}: raise --N")
        keys = np.where(in_stratum, rng.random(judge.shape), 2.0)
        picks.append(np.argpartition(keys, size, axis=1)[:, :size])
        weights.append(np.repeat((stratum_n / size)[:, None], size, axis=1))
    return np.concatenate(picks, axis=1), np.concatenate(weights, axis=1).astype(np.float64)


def run_chunk(rng: np.random.Generator, count: int, n: int, big_n: int, z: float) -> dict[str, Array]:
    human, judge = worlds(rng, count, big_n)
    truth = human.mean(axis=1)
    sample = np.argpartition(rng.random((count, big_n)), n, axis=1)[:, :n]
    y, f = np.take_along_axis(human, sample, axis=1), np.take_along_axis(judge, sample, axis=1)
    tuned, classical = ppi_arrays(y, f, judge), ppi_arrays(y, f, judge, lam=1.0)
    strata, weights = judge_stratified_sample(rng, judge, n)
    ys, fs = np.take_along_axis(human, strata, axis=1), np.take_along_axis(judge, strata, axis=1)
    weighted, ignoring = ppi_arrays(ys, fs, judge, weights=weights), ppi_arrays(ys, fs, judge)
    judge_low, judge_high = wilson(judge.sum(axis=1), big_n, z)
    human_low, human_high = wilson(y.sum(axis=1), n, z)
    return {
        "agreement": (y == f).mean(axis=1),
        "judge_bias": judge.mean(axis=1) - truth,
        "ppi_covers": np.abs(tuned.estimate - truth) <= z * tuned.std_error,
        "classical_covers": np.abs(classical.estimate - truth) <= z * classical.std_error,
        "judge_covers": (judge_low <= truth) & (truth <= judge_high),
        "human_covers": (human_low <= truth) & (truth <= human_high),
        "ratio": 2 * z * tuned.std_error / (human_high - human_low),
        "classical_ratio": 2 * z * classical.std_error / (human_high - human_low),
        "ppi_width": 2 * z * tuned.std_error,
        "lam": tuned.lam,
        "weighted_covers": np.abs(weighted.estimate - truth) <= z * weighted.std_error,
        "ignoring_weights_covers": np.abs(ignoring.estimate - truth) <= z * ignoring.std_error,
        "weighted_width_ratio": weighted.std_error / tuned.std_error,
        "effective_n": n * tuned.human_std_error**2 / tuned.std_error**2,
    }


def simulate(count: int, seed: int, n: int, big_n: int, chunk: int = 100) -> dict[str, Any]:
    rng, z = np.random.default_rng(seed), z_value(0.05)
    parts = [run_chunk(rng, min(chunk, count - start), n, big_n, z) for start in range(0, count, chunk)]
    columns = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    ratio = columns["ratio"]
    return {
        "worlds": count,
        "seed": seed,
        "n": n,
        "N": big_n,
        "mean_agreement": round(float(columns["agreement"].mean()), 4),
        "mean_abs_judge_bias": round(float(np.abs(columns["judge_bias"]).mean()), 4),
        "ppi_coverage": round(float(columns["ppi_covers"].mean()), 4),
        "classical_ppi_coverage": round(float(columns["classical_covers"].mean()), 4),
        "judge_only_wilson_coverage": round(float(columns["judge_covers"].mean()), 4),
        "human_only_wilson_coverage": round(float(columns["human_covers"].mean()), 4),
        "share_ppi_width_le_human_only": round(float((ratio <= 1).mean()), 4),
        "mean_width_ratio": round(float(ratio.mean()), 4),
        "width_ratio_range": [round(float(ratio.min()), 4), round(float(ratio.max()), 4)],
        "mean_classical_width_ratio": round(float(columns["classical_ratio"].mean()), 4),
        "mean_ppi_width": round(float(columns["ppi_width"].mean()), 4),
        "mean_lam": round(float(columns["lam"].mean()), 4),
        "mean_effective_n": round(float(columns["effective_n"].mean()), 1),
        "judge_stratified_sample": {
            "weighted_ppi_coverage": round(float(columns["weighted_covers"].mean()), 4),
            "unweighted_ppi_coverage": round(float(columns["ignoring_weights_covers"].mean()), 4),
            "mean_width_ratio_to_uniform_ppi": round(float(columns["weighted_width_ratio"].mean()), 4),
        },
    }


# --- routing (issue #20 item 3) ----------------------------------------------------------------------------


def routing_worlds(rng: np.random.Generator, count: int, big_n: int) -> tuple[Array, Array, Array]:
    """count worlds in which a second judge (or a re-run) disagrees with the first on ~29 % of the examples,
    and the first judge's errors concentrate there: right ~55 % where the two disagree, ~90 % where they
    agree (~80 % overall), each rate shifted by class and by topic. The human labels, the first judge's and
    the second's, each (count, big_n)."""
    shares = rng.dirichlet(np.full(TOPICS, 2.0), size=count)
    topic = (rng.random((count, big_n))[:, :, None] > np.cumsum(shares, axis=1)[:, None, :]).sum(axis=2)
    topic = np.minimum(topic, TOPICS - 1)
    pick = np.take_along_axis
    human_share = rng.uniform(0.35, 0.85, size=(count, TOPICS))
    human = (rng.random((count, big_n)) < pick(human_share, topic, axis=1)).astype(np.float64)
    by_class = np.where(human == 1, 1.0, -1.0)  # "no failure" or "failure": the rates shift with the class
    shift = pick(rng.uniform(-1, 1, size=(count, TOPICS)), topic, axis=1)
    disagree = rng.random((count, big_n)) < 0.29 - 0.05 * by_class + 0.06 * shift
    right = np.where(disagree, 0.55 + 0.05 * by_class + 0.08 * shift, 0.90 + 0.03 * by_class - 0.04 * shift)
    first = np.where(rng.random((count, big_n)) < right, human, 1 - human)
    second = np.where(disagree, 1 - first, first)
    return human, first, second


def routed_probabilities(first: Array, second: Array, n: int, mix: float) -> Array:
    """One world's inclusion probabilities of the disagreement / routing design (h2e_site.stats.sampling): the
    uncertainty of each example from its two verdicts ("has failure" = label 0)."""
    verdicts = np.stack([first == 0, second == 0], axis=1)
    uncertainty = {i: judge_uncertainty(v.tolist()) for i, v in enumerate(verdicts)}
    probabilities = disagreement_probabilities(uncertainty, n, mix=mix)
    return np.array([probabilities[i] for i in range(len(first))])


def routed_inclusion(first: Array, second: Array, n: int, mix: float, two_rounds: bool) -> Array:
    """Every frame example's inclusion probability: one routed round of n, or n / 2 uniform then n - n / 2
    routed (h2e_site.stats.sampling.inclusion_after_rounds)."""
    if not two_rounds:
        return routed_probabilities(first, second, n, mix)
    routed = routed_probabilities(first, second, n - n // 2, mix)
    uniform = (n // 2) / len(first)
    return np.array([inclusion_after_rounds([uniform, p]) for p in routed.tolist()])


def routed_draw(
    first: Array, second: Array, n: int, mix: float, seed: int, two_rounds: bool
) -> NDArray[np.intp]:
    """The examples drawn: systematic PPS per round (h2e_site.stats.sampling.systematic_pps), rounds
    united."""
    if not two_rounds:
        pi = routed_probabilities(first, second, n, mix)
        return np.array(systematic_pps(dict(enumerate(pi.tolist())), seed), dtype=np.intp)
    routed = routed_probabilities(first, second, n - n // 2, mix)
    uniform = dict.fromkeys(range(len(first)), (n // 2) / len(first))
    drawn = set(systematic_pps(uniform, seed + 1)) | set(
        systematic_pps(dict(enumerate(routed.tolist())), seed)
    )
    return np.array(sorted(drawn), dtype=np.intp)


def app_estimate(human: Array, judge: Array, items: NDArray[np.intp], pi: Array) -> tuple[float, float]:
    """What the app computes (annotation.kinds.critical_failures.calibration.calibrated.score_of): the
    design-stratified PPI++ estimate over the
    distinct inclusion probabilities when design_stratified_score's rule holds, else the 1 / pi weighted one.
    The estimate and its standard error."""
    labelled = np.zeros(len(human), dtype=bool)
    labelled[items] = True
    strata = []
    for positions in probability_levels(pi.tolist()).values():
        members = np.zeros(len(human), dtype=bool)
        members[positions] = True
        chosen = members & labelled
        strata.append(
            (StratumLabels(human[chosen].tolist(), judge[chosen].tolist(), judge[members].tolist()),
             int(members.sum()))
        )  # fmt: skip
    score = design_stratified_score(strata)
    if score is None:
        score = calibrated_score(
            human[items].tolist(),
            judge[items].tolist(),
            judge.tolist(),
            inclusion_probabilities=pi[items].tolist(),
        )
    return float(score.estimate or 0.0), float(score.std_error or 0.0)


def weighted_estimate(human: Array, judge: Array, items: NDArray[np.intp], pi: Array) -> tuple[float, float]:
    """The same sample weighted by 1 / pi (Hajek; ppi-python's weighted estimate), for comparison."""
    result = ppi_arrays(
        human[items][None, :], judge[items][None, :], judge[None, :], weights=1 / pi[items][None, :]
    )
    return float(result.estimate[0]), float(result.std_error[0])


def routing_chunk(
    rng: np.random.Generator, count: int, n: int, big_n: int, z: float, mix: float
) -> dict[str, Array]:
    human, first, second = routing_worlds(rng, count, big_n)
    truth = human.mean(axis=1)
    sample = np.argpartition(rng.random((count, big_n)), n, axis=1)[:, :n]
    y, f = np.take_along_axis(human, sample, axis=1), np.take_along_axis(first, sample, axis=1)
    uniform = ppi_arrays(y, f, first)
    judge_low, judge_high = wilson(first.sum(axis=1), big_n, z)
    out: dict[str, list[float]] = {key: [] for key in ("routed", "two", "weighted", "n2")}
    out.update({f"{key}_covers": [] for key in ("routed", "two", "weighted")})
    seeds = rng.integers(0, 2**31, size=count)
    for w in range(count):
        for key, two_rounds in (("routed", False), ("two", True)):
            pi = routed_inclusion(first[w], second[w], n, mix, two_rounds)
            items = routed_draw(first[w], second[w], n, mix, int(seeds[w]), two_rounds)
            estimators = [(key, app_estimate)] + ([("weighted", weighted_estimate)] if not two_rounds else [])
            for name, estimator in estimators:
                estimate, se = estimator(human[w], first[w], items, pi)
                out[name].append(2 * z * se)
                out[f"{name}_covers"].append(float(abs(estimate - truth[w]) <= z * se))
            if two_rounds:
                out["n2"].append(len(items))
    return {
        "agreement": (first == human).mean(axis=1),
        "disagreement": (first != second).mean(axis=1),
        "uniform_width": 2 * z * uniform.std_error,
        "uniform_covers": np.abs(uniform.estimate - truth) <= z * uniform.std_error,
        "judge_covers": (judge_low <= truth) & (truth <= judge_high),
        **{key: np.array(values) for key, values in out.items()},
    }


def simulate_routing(
    count: int, seed: int, n: int, big_n: int, mix: float, chunk: int = 50
) -> dict[str, Any]:
    rng, z = np.random.default_rng(seed), z_value(0.05)
    parts = [
        routing_chunk(rng, min(chunk, count - start), n, big_n, z, mix) for start in range(0, count, chunk)
    ]
    c = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}

    def r(x: Any) -> float:
        return round(float(x), 4)

    return {
        "worlds": count,
        "mix": mix,
        "mean_agreement": r(c["agreement"].mean()),
        "mean_disagreement_between_judges": r(c["disagreement"].mean()),
        "uniform": {"coverage": r(c["uniform_covers"].mean()), "mean_width": r(c["uniform_width"].mean())},
        "routed": {
            "coverage": r(c["routed_covers"].mean()),
            "mean_width": r(c["routed"].mean()),
            "mean_width_ratio_to_uniform": r((c["routed"] / c["uniform_width"]).mean()),
            "share_narrower_than_uniform": r((c["routed"] < c["uniform_width"]).mean()),
        },
        "routed_weighted_by_inverse_probability": {
            "coverage": r(c["weighted_covers"].mean()),
            "mean_width": r(c["weighted"].mean()),
            "mean_width_ratio_to_uniform": r((c["weighted"] / c["uniform_width"]).mean()),
        },
        "two_rounds": {
            "coverage": r(c["two_covers"].mean()),
            "mean_width": r(c["two"].mean()),
            "mean_width_ratio_to_uniform": r((c["two"] / c["uniform_width"]).mean()),
            "mean_distinct_items": r(c["n2"].mean()),
        },
        "judge_only_wilson_coverage": r(c["judge_covers"].mean()),
    }


def doc_text(figures: dict[str, Any], seconds: float, argv: list[str]) -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join(["benchmarks/calibration_sim.py", *argv])
    return (
        f"### Run of {when}\n\n"
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}; load average before the run {load}. Command: `.venv/bin/python {command}`; "
        f"{seconds:.1f} s.\n\n```json\n{json.dumps(figures, indent=2)}\n```\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worlds", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=200, help="human labels per world")
    parser.add_argument("--N", type=int, default=7000, help="judge labels (examples) per world")
    parser.add_argument("--mix", type=float, default=MIX, help="the routing design's uniform share")
    parser.add_argument("--append-doc", action="store_true", help="add the run to docs/benchmarks.md")
    args = parser.parse_args()
    if not 4 <= args.n < args.N or args.worlds < 1 or not 0 < args.mix <= 1:
        parser.error("need --worlds >= 1, 4 <= --n < --N and 0 < --mix <= 1")
    load = os.getloadavg()
    started = time.perf_counter()
    figures = simulate(args.worlds, args.seed, args.n, args.N)
    figures["routing"] = simulate_routing(args.worlds, args.seed, args.n, args.N, args.mix)
    seconds = time.perf_counter() - started
    print(json.dumps({**figures, "seconds": round(seconds, 2), "load_average": load}, indent=2))
    if args.append_doc:
        insert_into_section(HEADING, doc_text(figures, seconds, sys.argv[1:]))


if __name__ == "__main__":
    main()
