"""Build `h2e bench run` out_root trees in the exact reference format, for import/export tests.

Records follow the reference's GenerationRecord / JudgmentRecord key order, lines are
`json.dumps(record, ensure_ascii=False)`, manifests
`json.dumps(manifest, ensure_ascii=False, indent=2) + "\\n"`.
Nothing here imports project code: the trees are independent test data.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Example:
    source_example_id: str
    topic: str
    goal: str
    steps: list[str]
    resources: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GeneratorSpec:
    model: str
    generator_id: str
    backend: str = "deluge"
    provider: str = "openai"
    run_name: str = ""
    model_type: str = "inst"
    prompt_sha256: str = "a" * 64

    def manifest(self) -> dict[str, Any]:
        return {
            "generator_id": self.generator_id,
            "generation_prompt_sha256": self.prompt_sha256,
            "generation_prompt_path": f"prompts/inference_{self.model_type}.txt",
            "generation": {"model_type": self.model_type},
            "generator": {
                "backend": self.backend,
                "provider": self.provider,
                "model": self.model,
                "temperature": 0.0,
                "max_new_tokens": 4096,
                "max_requests_per_minute": 1000,
                "max_tokens_per_minute": 100000,
                "reasoning_effort": None,
                "vllm_overrides": {},
            },
        }

    def dir_name(self) -> str:
        name = self.run_name or re.sub(r"[^A-Za-z0-9._-]", "-", self.model).strip("-") or "model"
        return f"{name}_{self.generator_id}"


@dataclass(frozen=True)
class JudgeSpec:
    model: str
    judge_id: str
    backend: str = "vllm"
    provider: str = "local"
    prompt_sha256: str = "b" * 64

    def manifest(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            "judge_prompt_sha256": self.prompt_sha256,
            "judge_prompt_path": "/home/someone/how2everything/prompts/judge.txt",
            "judge": {
                "backend": self.backend,
                "provider": self.provider,
                "model": self.model,
                "temperature": 0.0,
                "max_new_tokens": 4096,
                "reasoning_effort": None,
                "vllm_overrides": {"chat_template_kwargs": {"enable_thinking": False}},
            },
        }

    def dir_name(self) -> str:
        pieces = [p for p in re.split(r"[/_]+", self.model) if p]
        return f"{pieces[-1] if pieces else 'judge'}_{self.judge_id}"


def completion_for(example: Example, tag: str) -> tuple[str, list[str]]:
    steps = [f"{tag}: {s}" for s in example.steps]
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)), steps


def generation_record(
    gen: GeneratorSpec, ex: Example, *, completion: str, predicted: list[str], **extra: Any
) -> dict[str, Any]:
    return {
        "schema_version": "how2bench.generation.v1",
        "generator_id": gen.generator_id,
        "generation_prompt_sha256": gen.prompt_sha256,
        "source_example_id": ex.source_example_id,
        "topic": ex.topic,
        "goal": ex.goal,
        "steps": ex.steps,
        "resources": ex.resources,
        "model_completion": completion,
        "predicted_steps": predicted,
        "prompt": f"Goal:\n{ex.goal}\n\nResources:\n{json.dumps(ex.resources, ensure_ascii=False)}\n",
        "generator": {"backend": gen.backend, "provider": gen.provider, "model": gen.model},
        **extra,
    }


def judgment_record(
    judge: JudgeSpec,
    ex: Example,
    predicted: list[str],
    *,
    failures: list[dict[str, Any]] | None = None,
    parse_failed: bool = False,
    has_failure: bool | None = None,
    n_failures: int | None = None,
    reasoning: str = "",
    **extra: Any,
) -> dict[str, Any]:
    failures = [] if parse_failed else (failures or [])
    return {
        "schema_version": "how2bench.judgment.v1",
        "judge_id": judge.judge_id,
        "judge_prompt_sha256": judge.prompt_sha256,
        "source_example_id": ex.source_example_id,
        "topic": ex.topic,
        "goal": ex.goal,
        "steps": ex.steps,
        "resources": ex.resources,
        "predicted_steps": predicted,
        "judge": {"backend": judge.backend, "provider": judge.provider, "model": judge.model},
        "reasoning": reasoning,
        "critical_failures": failures,
        "has_failure": (bool(failures) or parse_failed) if has_failure is None else has_failure,
        "n_failures": len(failures) if n_failures is None else n_failures,
        "parse_failed": parse_failed,
        **extra,
    }


def failure(text: str, l1: list[int], l2: list[int]) -> dict[str, Any]:
    return {"failure": text, "L1_steps": l1, "L2_steps": l2}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    return write_lines(path, [json.dumps(r, ensure_ascii=False) for r in records])


def write_manifest(path: Path, manifest: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def write_run(
    root: Path,
    gen: GeneratorSpec,
    generations: list[dict[str, Any]],
    judgments: dict[JudgeSpec, list[dict[str, Any]]],
    *,
    manifests: bool = True,
) -> Path:
    run_dir = root / gen.dir_name()
    write_jsonl(run_dir / "generations.jsonl", generations)
    if manifests:
        write_manifest(run_dir / "generation_manifest.json", gen.manifest())
    for judge, records in judgments.items():
        judge_dir = run_dir / "judgments" / judge.dir_name()
        write_jsonl(judge_dir / "judgments.jsonl", records)
        if manifests:
            write_manifest(judge_dir / "judge_manifest.json", judge.manifest())
    return run_dir


# --- the standard tree -----------------------------------------------------------------------------

EXAMPLES = [
    Example(
        "ex-001",
        "Food & Dining",
        "Make a crème brûlée 🍮 at home.",
        ["Heat the cream.", "Whisk the yolks.", "Bake in a water bath.", "Caramelise the sugar."],
        ["cream", "egg yolks", "sugar"],
    ),
    Example(
        "ex-002",
        "Science, Math & Technology",
        "Electrolyse H₂O to collect hydrogen.",
        ["Fill the cell with water.", "Add electrolyte.", "Connect the battery.", "Collect the gas."],
        ["battery", "electrodes"],
    ),
    Example(
        "ex-003",
        "茶道 Tea",
        "泡一杯中文绿茶 (brew green tea).",
        ["烧水到80度。", "放入茶叶。", "冲泡两分钟。"],
        [],
    ),
    Example(
        "ex-004",
        "Industrial",
        "Replace a conveyor belt.",
        [
            "Lock out power.",
            "Release tension.",
            "Remove the old belt.",
            "Fit the new belt.",
            "Tension and test.",
        ],
        ["new belt", "wrench"],
    ),
    Example(
        "ex-005",
        "Industrial",
        "Calibrate a pressure gauge.",
        ["Isolate the gauge.", "Connect the tester.", "Compare readings.", "Adjust the zero."],
        ["dead-weight tester"],
    ),
    Example(
        "ex-006",
        "Health",
        "Clean a small wound.",
        ["Wash your hands.", "Rinse the wound.", "Apply antiseptic.", "Cover with a bandage."],
        ["soap", "antiseptic", "bandage"],
    ),
]

GEN_A = GeneratorSpec("gpt-4.1", "0167f07a71c4")
GEN_B = GeneratorSpec("Qwen/Qwen3-8B", "b2b2b2b2b2b2", backend="vllm", provider="local", run_name="qwen3-8b")
GEN_C = GeneratorSpec(
    "meta-llama/Llama-3.1-8B", "c3c3c3c3c3c3", backend="vllm", provider="local", model_type="base"
)  # written without manifests
JUDGE_A = JudgeSpec("how2everything/how2judge", "j1j1j1j1j1j1")
JUDGE_B = JudgeSpec("openai/gpt-5_mini", "j2j2j2j2j2j2", backend="deluge", provider="openai")


def _judgments_a(gen: GeneratorSpec, judge: JudgeSpec, preds: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Judge A: failures, a pass, Industrial all parse failures, a duplicated line, an extra key."""
    e1, e2, e3, e4, e5, e6 = EXAMPLES
    return [
        judgment_record(judge, e1, preds["ex-001"], reasoning="Ça va: pas de problème.", source="test é"),
        judgment_record(
            judge,
            e2,
            preds["ex-002"],
            reasoning="Skips the electrolyte 中文.",
            failures=[failure("Missing electrolyte: pure H₂O barely conducts.", [2], [2, 3])],
        ),
        judgment_record(
            judge,
            e3,
            preds["ex-003"],
            failures=[failure("Water too hot 🔥.", [1], [1]), failure("No timing.", [], [3])],
        ),
        judgment_record(judge, e4, preds["ex-004"], parse_failed=True),
        judgment_record(judge, e5, preds["ex-005"], parse_failed=True),
        judgment_record(judge, e6, preds["ex-006"], has_failure=True, n_failures=0, reasoning="odd judge"),
        judgment_record(
            judge,
            e3,
            preds["ex-003"],
            failures=[failure("Water too hot 🔥.", [1], [1]), failure("No timing.", [], [3])],
        ),
    ]


def _judgments_b(gen: GeneratorSpec, judge: JudgeSpec, preds: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Judge B: every example judged, one failure each on the odd ones."""
    return [
        judgment_record(
            judge,
            ex,
            preds[ex.source_example_id],
            failures=[failure(f"Wrong order in {ex.goal}", [1, 2], [2])] if i % 2 else [],
        )
        for i, ex in enumerate(EXAMPLES)
    ]


def build_standard_tree(root: Path) -> Path:
    """Three runs (one without manifests) x two judges, with every awkward case the import must handle."""
    for gen in (GEN_A, GEN_B, GEN_C):
        preds: dict[str, list[str]] = {}
        generations = []
        for ex in EXAMPLES:
            completion, predicted = completion_for(ex, gen.model)
            preds[ex.source_example_id] = predicted
            extra = {"source": "paper é"} if ex.source_example_id == "ex-001" else {}
            generations.append(
                generation_record(gen, ex, completion=completion, predicted=predicted, **extra)
            )
        if gen is GEN_A:
            generations.append(generations[1])  # a duplicated line
        judgments = {JUDGE_A: _judgments_a(gen, JUDGE_A, preds), JUDGE_B: _judgments_b(gen, JUDGE_B, preds)}
        write_run(root, gen, generations, judgments, manifests=gen is not GEN_C)
    return root
