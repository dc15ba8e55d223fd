"""The synthetic demo world's texts: goals and L1 steps written from per-topic templates, the L2 a generator
writes from them (a faithful rewording, or one with a planted critical failure), the judges' JSON answers and
the annotators' failure descriptions. Everything is drawn from the `random.Random` the caller passes, so a
seed gives the same texts every time."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from mining.topics import WEBORGANIZER_TOPICS

# Per topic: (actions, objects, tools). A goal is "<action> <object> <qualifier>".
TOPIC_WORDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "Art & Design": (
        ("paint", "frame", "varnish"),
        ("a watercolour landscape", "a linocut print", "a clay mug", "a wall mural"),
        ("a flat brush", "masking tape", "a palette knife"),
    ),
    "Crime & Law": (
        ("file", "appeal", "document"),
        ("a small-claims case", "a parking fine", "a tenancy deposit dispute", "a witness statement"),
        ("a dated folder", "a registered letter", "the court's form"),
    ),
    "Education & Jobs": (
        ("prepare", "write", "revise"),
        ("a cover letter", "a lesson plan", "a reading list", "a research poster"),
        ("a template", "a highlighter", "a timer"),
    ),
    "Electronics & Hardware": (
        ("solder", "replace", "test"),
        ("a headphone jack", "a laptop fan", "a USB charging port", "a doorbell circuit"),
        ("a multimeter", "flux", "a precision screwdriver"),
    ),
    "Fashion & Beauty": (
        ("hem", "dye", "mend"),
        ("a pair of jeans", "a wool scarf", "a linen shirt", "a leather belt"),
        ("a sewing needle", "fabric chalk", "a steam iron"),
    ),
    "Food & Dining": (
        ("bake", "braise", "ferment"),
        ("a sourdough loaf", "a lentil stew", "a batch of kimchi", "a lemon tart"),
        ("a kitchen scale", "a heavy pot", "a wooden spoon"),
    ),
    "Health": (
        ("treat", "track", "ease"),
        ("a sprained ankle", "seasonal allergies", "a tension headache", "lower back stiffness"),
        ("an ice pack", "a symptom diary", "a foam roller"),
    ),
    "Home & Hobbies": (
        ("repair", "build", "restore"),
        ("a dripping tap", "a raised garden bed", "a wooden chair", "a bird feeder"),
        ("an adjustable spanner", "wood glue", "a drill"),
    ),
    "Industrial": (
        ("inspect", "calibrate", "service"),
        ("a pressure gauge", "a conveyor belt", "a welding station", "an air compressor"),
        ("a torque wrench", "a checklist", "a lockout tag"),
    ),
    "Religion": (
        ("prepare", "observe", "lead"),
        ("a festival meal", "a morning prayer", "a study circle", "a remembrance service"),
        ("a printed order of service", "candles", "a quiet room"),
    ),
    "Science, Math & Technology": (
        ("measure", "plot", "simulate"),
        ("a pendulum's period", "a titration curve", "a population model", "a sensor's noise"),
        ("a stopwatch", "a spreadsheet", "a calibrated probe"),
    ),
    "Sports & Fitness": (
        ("train for", "warm up for", "pace"),
        ("a 10 km run", "a rowing session", "a climbing route", "a swim relay"),
        ("a heart-rate strap", "a training log", "a resistance band"),
    ),
    "Transportation": (
        ("change", "check", "replace"),
        ("a bicycle tyre", "a car's wiper blades", "a scooter's brake pads", "a trailer light"),
        ("tyre levers", "a pump", "a socket set"),
    ),
    "Travel & Tourism": (
        ("plan", "pack for", "book"),
        ("a rail journey", "a hiking weekend", "a city break", "a ferry crossing"),
        ("a packing list", "an offline map", "a travel wallet"),
    ),
}
QUALIFIERS = ("", " at home", " for a beginner", " on a budget", " in one afternoon", " safely")

# L1 step templates, in the order a procedure uses them; {object}, {tool}, {amount} are filled in.
STEP_TEMPLATES = (
    "Gather {tool} and everything else you need before you start on {object}.",
    "Clear a workspace and lay out the parts of {object} in the order you will use them.",
    "Check {object} for damage or missing pieces and note what needs attention.",
    "Measure and mark the places you will work on, using {tool}.",
    "Prepare the first section of {object}, allowing {amount} minutes for it.",
    "Work through the main task on {object} slowly, one section at a time.",
    "Let {object} rest or set for {amount} minutes before you handle it again.",
    "Check the result against your notes and correct anything that is uneven.",
    "Finish {object} with {tool}, working from the centre outwards.",
    "Clean {tool} and put everything away so it is ready for next time.",
)
AMOUNTS = (5, 10, 15, 20, 30, 45)


@dataclass(frozen=True)
class ProcedureText:
    goal: str
    resources: list[str]
    steps: list[str]


def procedure_text(rng: random.Random, topic: str, used_goals: set[str]) -> ProcedureText:
    """A goal of the topic not in `used_goals` (added to it), its resources and 5 to 9 L1 steps."""
    actions, objects, tools = TOPIC_WORDS[topic]
    while True:
        goal = f"How to {rng.choice(actions)} {rng.choice(objects)}{rng.choice(QUALIFIERS)}"
        if goal not in used_goals:
            used_goals.add(goal)
            break
    thing = goal.split(" ", 3)[-1]
    tool = rng.choice(tools)
    n = rng.randint(5, 9)
    picked = sorted(rng.sample(range(len(STEP_TEMPLATES)), n))
    steps = [STEP_TEMPLATES[i].format(object=thing, tool=tool, amount=rng.choice(AMOUNTS)) for i in picked]
    return ProcedureText(goal, sorted({tool, *rng.sample(tools, 2)}), steps)


# --- L2 and its planted failure -------------------------------------------------------------------------

REWORDINGS = (("Gather", "Collect"), ("Check", "Inspect"), ("slowly", "carefully"), ("Clear", "Tidy"),
              ("Finish", "Complete"))  # fmt: skip


@dataclass(frozen=True)
class PlantedFailure:
    """The critical failure an L2 was written with: what it is and the L1 / L2 steps (1-based) it concerns."""

    description: str
    l1_steps: list[int]
    l2_steps: list[int]


@dataclass(frozen=True)
class L2Text:
    steps: list[str]
    failure: PlantedFailure | None


def l2_text(rng: random.Random, l1: list[str], *, fails: bool) -> L2Text:
    """A generator's L2 for the L1: each step reworded; when `fails`, with one critical failure planted (a
    step left out, two steps swapped, or a duration contradicting L1's)."""
    steps = [_reword(rng, step) for step in l1]
    if not fails:
        return L2Text(steps, None)
    defect = rng.choice(("omit", "swap", "contradict"))
    i = rng.randrange(1, len(steps) - 1)
    if defect == "omit":
        del steps[i]
        failure = PlantedFailure(f"L2 leaves out L1 step {i + 1}, which the goal depends on.", [i + 1], [i])
    elif defect == "swap":
        steps[i], steps[i + 1] = steps[i + 1], steps[i]
        failure = PlantedFailure(
            f"Steps {i + 1} and {i + 2} are in the wrong order: L2 does the later step first.",
            [i + 1, i + 2],
            [i + 1, i + 2],
        )
    else:
        steps[i] = f"{steps[i].rstrip('.')}, then skip the rest of this step and move on immediately."
        failure = PlantedFailure(
            f"Step {i + 1} tells the reader to skip part of the work that L1 step {i + 1} requires.",
            [i + 1],
            [i + 1],
        )
    return L2Text(steps, failure)


def _reword(rng: random.Random, step: str) -> str:
    for old, new in REWORDINGS:
        if old in step and rng.random() < 0.5:
            step = step.replace(old, new, 1)
    return step


def completion_text(steps: list[str]) -> str:
    """An L2 as a model writes it: numbered steps, one a line (judging/parsing.extract_steps reads them)."""
    return "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1))


# --- judges and annotators -----------------------------------------------------------------------------

FALSE_ALARMS = (
    "Step {n} is too vague to follow without guessing what is meant.",
    "Step {n} skips a safety precaution the goal needs.",
    "Step {n} does not say how long to wait, so the result may fail.",
)


def false_alarm(rng: random.Random, n_l2: int) -> PlantedFailure:
    """A failure someone reports where the L2 has none: a plausible complaint about a random step."""
    n = rng.randint(1, n_l2)
    return PlantedFailure(rng.choice(FALSE_ALARMS).format(n=n), [], [n])


def judge_output(failures: list[PlantedFailure], *, reasoning: str) -> str:
    """A judge's raw answer in the JSON format prompts/judge.txt asks for."""
    answer = {
        "reasoning": reasoning,
        "critical_failures": [
            {"failure": f.description, "L1_steps": f.l1_steps, "L2_steps": f.l2_steps} for f in failures
        ],
    }
    return json.dumps(answer)


TOPICS = WEBORGANIZER_TOPICS
