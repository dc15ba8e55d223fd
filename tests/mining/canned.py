"""Canned How2Mine stage answers for the loopback OpenAI-compatible server, steered by document markers.

A document's text carries markers naming what each stage should answer; the goal the extraction returns
repeats them, so the later stages (whose prompts show the goal) see them too:

    NOPROC   extraction: no valid process        FEWSTEPS  extraction: 3 steps (heuristics reject)
    REPEAT   extraction: repetitive steps        GARBLE    extraction: an unparsable answer
    BRAND    LLM filter: judgment true           FINALNO   final validation: sequential "no"
    NOGOAL   extraction: valid steps, an empty goal (the LLM filter drops it without a request)
    (none)   passes every stage

Answers come fenced or wrapped in prose now and then, as chat models do.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mining.models import SourceDocument
from tests.factories import make_topic
from tests.llm_server import fenced, in_prose

MARKERS = ("NOPROC", "FEWSTEPS", "REPEAT", "GARBLE", "BRAND", "FINALNO", "NOGOAL")
GOOD_STEPS = [
    "Preheat the oven to 220 degrees.",
    "Mix flour, water, salt and yeast in a bowl.",
    "Knead the dough for ten minutes.",
    "Let the dough rise for one hour.",
    "Shape the dough into a round loaf.",
    "Bake the loaf for thirty minutes.",
]


def prompt_of(body: dict[str, Any]) -> str:
    return body.get("prompt") or " ".join(str(m.get("content", "")) for m in body.get("messages", []))


def stage_of(prompt: str) -> str:
    if "<start of document>" in prompt:
        return "extraction"
    if "## Possible Categories" in prompt:
        return "filter"
    if "Revise the goal and steps" in prompt:
        return "postprocess"
    if "deduplicated list of every distinct resource" in prompt:
        return "resources"
    return "final_filter"


def markers_in(prompt: str) -> set[str]:
    return {m for m in MARKERS if re.search(rf"\b{m}\b", prompt)}


def canned_responder(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    stage, markers = stage_of(prompt), markers_in(prompt)
    return ANSWERS[stage](prompt, markers)


def _extraction(prompt: str, markers: set[str]) -> str:
    document = prompt.split("<start of document>", 1)[1]
    marks = " ".join(sorted(markers_in(document)))
    if "GARBLE" in markers:
        return "I think the steps are: mix, knead, bake {not json"
    if "NOPROC" in markers:
        return json.dumps({"has_valid_process": False, "goal": "", "steps": []})
    steps = GOOD_STEPS
    if "FEWSTEPS" in markers:
        steps = GOOD_STEPS[:3]
    if "REPEAT" in markers:
        steps = ["Stir the pot gently."] * 6
    goal = "" if "NOGOAL" in markers else f"Bake a loaf of bread {marks}".strip()
    return fenced(json.dumps({"has_valid_process": True, "goal": goal, "steps": steps}))


def _filter(prompt: str, markers: set[str]) -> str:
    if "BRAND" in markers:
        return json.dumps({"judgment": True, "reason": "Named-entity focused: a branded product."})
    return in_prose(json.dumps({"judgment": False, "reason": ""}))


def _postprocess(prompt: str, markers: set[str]) -> str:
    goal = prompt.split("Goal:\n", 1)[1].split("\n", 1)[0]
    return json.dumps({"rewritten_goal": f"{goal} with a crisp crust", "rewritten_steps": GOOD_STEPS[1:]})


def _resources(prompt: str, markers: set[str]) -> str:
    return json.dumps({"resources": ["oven", "bowl", "flour", "oven"]})


def _final(prompt: str, markers: set[str]) -> str:
    no = {"answer": "no", "reason": "The steps branch."}
    answers = {q: {"answer": "yes", "reason": ""} for q in ("correctness", "no_specific_entity")}
    answers["sequential"] = no if "FINALNO" in markers else {"answer": "yes", "reason": ""}
    answers["goal_steps_alignment"] = {"answer": "yes", "reason": ""}
    return json.dumps(answers)


ANSWERS = {
    "extraction": _extraction,
    "filter": _filter,
    "postprocess": _postprocess,
    "resources": _resources,
    "final_filter": _final,
}


def make_document(doc_id: str, marker: str = "", *, topic: str | None = "Food & Dining") -> SourceDocument:
    # the id makes each document's text (so its extraction request) its own, as web documents are
    text = f"How to bake bread at home ({doc_id}). {marker} Mix, knead, rise, shape and bake.".replace(
        "  ", " "
    )
    return SourceDocument.objects.create(
        doc_id=doc_id,
        text=text,
        url=f"https://example.com/{doc_id}",
        topic=make_topic(topic) if topic else None,
    )


def loopback_config(base_url: str, **top: Any) -> dict[str, Any]:
    return {
        "name": "loopback",
        "prices": {"loopback-model": {"input_per_million": 2.0, "output_per_million": 8.0}},
        "stages": {
            "default": {
                "model": "loopback-model",
                "backend": "openai",
                "provider": "loopback",
                "base_url": base_url,
                "max_concurrency": 4,
                "max_attempts": 2,
                "max_requests_per_minute": 100_000,
                "max_tokens_per_minute": 100_000_000,
            }
        },
        **top,
    }
