"""generator_id / judge_id as the reference computes them, and its folder names."""

from __future__ import annotations

from pathlib import Path

from judging import ids

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"


def test_it_reproduces_the_reference_generator_id_vector() -> None:
    prompt = (PROMPTS / "inference_inst.txt").read_text(encoding="utf-8")
    assert ids.prompt_sha256(prompt) == "fd547fc7d7c161698b1a56cd0cc3054b20e3dbdce63dc6ab8270b1ca0ee34c16"
    generator_id = ids.generator_id(
        backend="deluge",
        provider="openai",
        model="gpt-4.1",
        temperature=0,  # an int is hashed as the float 0.0, as the reference does
        max_new_tokens=4096,
        max_requests_per_minute=1000,
        max_tokens_per_minute=100000,
        reasoning_effort=None,
        vllm_overrides=None,
        model_type="inst",
        prompt_text=prompt,
    )
    assert generator_id == "0167f07a71c4"


def test_it_changes_the_generator_id_with_the_prompt_text() -> None:
    common = dict(
        backend="deluge", provider="openai", model="gpt-4.1", temperature=0.0, max_new_tokens=4096,
        max_requests_per_minute=1000, max_tokens_per_minute=100000, reasoning_effort=None,
        vllm_overrides={}, model_type="inst",
    )  # fmt: skip
    assert ids.generator_id(**common, prompt_text="a") != ids.generator_id(**common, prompt_text="b")


def test_it_hashes_judge_prompt_contents_not_paths() -> None:
    common = dict(
        backend="vllm", provider="local", model="how2everything/how2judge", temperature=0.0,
        max_new_tokens=4096, reasoning_effort=None,
        vllm_overrides={"chat_template_kwargs": {"enable_thinking": False}},
    )  # fmt: skip
    first = ids.judge_id(**common, prompt_text="Judge this.")
    assert first == ids.judge_id(**common, prompt_text="Judge this.")
    assert len(first) == 12 and first != ids.judge_id(**common, prompt_text="Judge that.")


def test_it_names_run_and_judge_folders_like_the_reference() -> None:
    assert ids.run_name_for_model("Qwen/Qwen3-8B:instruct") == "Qwen-Qwen3-8B-instruct"
    assert ids.run_name_for_model("///") == "model"
    assert ids.judge_short_name("how2everything/how2judge") == "how2judge"
    assert ids.judge_short_name("openai/gpt-5_mini") == "mini"
    assert ids.run_dir_name(run_name="", model="gpt-4.1", generator_id="abc") == "gpt-4.1_abc"
    assert ids.judge_dir_name(model="a/b_c", judge_id="123") == "c_123"
