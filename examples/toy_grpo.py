"""A toy GRPO-shaped loop that gets its rewards from the studio, so that the studio's run page shows a run
being watched while it games the length reward (the paper's Table 12): steps x prompts x a group of
completions, each batch scored through the TRL adapter exactly as TRL's GRPOTrainer calls it.

Two servers of its own, on loopback, stand in for the GPUs:
- a **policy** whose answers are the procedure's reference steps padded with filler, drifting longer over
  the steps: the gen/ref word ratio goes from 1.0 at the first step to 1.5 at the last (the control run
  stays at 1.0), with a little noise per completion;
- a **judge** (OpenAI-compatible, the studio calls it) with a verbosity bias: a completion passes (no
  critical failure) with probability 0.35 + (ratio - 1) clipped to [0.05, 0.95], the draw fixed by a hash
  of its text, so longer answers pass more often.

The studio needs a reward config whose judge is this judge: configs/rewards/toy-verbose-judge.yaml
(judge configs/judges/toy-verbose-judge.yaml, at http://127.0.0.1:8097/v1 or H2E_TOY_JUDGE_URL). Then

    python examples/toy_grpo.py --url http://127.0.0.1:8000 --token <DRF token> --steps 20 --run toy-grpo

scores runs `toy-grpo` (drifting) and `toy-grpo-control` and prints each step's How2Score, format pass rate,
length reward and ratio. Needs only the h2e-reward package (clients/h2e-reward) and the standard library.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import threading
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from h2e_reward import RewardClient
from h2e_reward.trl import reward_funcs

PROCEDURES: list[dict[str, Any]] = [
    {
        "goal": "Make a cup of pour-over coffee",
        "resources": ["coffee beans", "grinder", "kettle", "dripper", "paper filter", "mug"],
        "steps": [
            "Heat water in the kettle to just off the boil.",
            "Grind 15 grams of coffee to a medium-fine grind.",
            "Rinse the paper filter in the dripper with hot water and discard the water.",
            "Add the ground coffee to the filter and pour a little water to let it bloom for 30 seconds.",
            "Pour the rest of the water slowly in circles until the mug holds 250 millilitres.",
        ],
    },
    {
        "goal": "Repot a root-bound houseplant",
        "resources": ["new pot one size larger", "potting mix", "trowel", "watering can"],
        "steps": [
            "Water the plant a day before so the root ball slides out easily.",
            "Tip the pot and ease the plant out, holding it by the base of the stems.",
            "Loosen the circling roots with your fingers and trim any dead ones.",
            "Put fresh potting mix in the new pot and set the plant at the same depth as before.",
            "Fill around the root ball with mix, firm it gently and water thoroughly.",
        ],
    },
    {
        "goal": "Change a flat tyre on a bicycle",
        "resources": ["tyre levers", "spare inner tube", "pump"],
        "steps": [
            "Open the brake and remove the wheel from the frame.",
            "Lever one side of the tyre off the rim and pull out the old tube.",
            "Run your fingers inside the tyre to find and remove whatever caused the puncture.",
            "Inflate the new tube slightly, fit it inside the tyre and push the tyre back onto the rim.",
            "Pump the tyre to the pressure printed on its sidewall and refit the wheel.",
        ],
    },
    {
        "goal": "Season a new cast-iron skillet",
        "resources": ["cast-iron skillet", "vegetable oil", "paper towels", "oven"],
        "steps": [
            "Wash the skillet with warm soapy water and dry it completely on the stove.",
            "Rub a thin layer of vegetable oil over every surface, inside and out.",
            "Wipe off the excess oil with a paper towel until the pan looks almost dry.",
            "Bake the skillet upside down at 230 degrees Celsius for one hour.",
            "Let it cool in the oven before using it.",
        ],
    },
]
OPENERS = [
    "Here is how:",
    "Steps:",
    "Do this:",
    "Follow these steps:",
    "How to do it:",
    "The steps:",
    "Method:",
    "Like so:",
]
FILLER_TEXT = (
    "taking care to do this carefully and thoroughly while paying close attention to every small detail "
    "so that nothing is missed and the result is as good as it can possibly be"
)
FILLER = FILLER_TEXT.split()


def ground_truth(procedure: dict[str, Any]) -> str:
    """The contract's ground truth (as the How2Train export writes it): an inline procedure."""
    return json.dumps({"procedure_id": None, **procedure})


def target_ratio(step: int, steps: int, drift: bool) -> float:
    """The policy's gen/ref word ratio at a step: 1.0 -> 1.5 over the run when drifting, else 1.0."""
    return 1.0 + 0.5 * step / max(1, steps - 1) if drift else 1.0


def padded_answer(steps: Sequence[str], ratio: float, variant: int = 0) -> str:
    """The reference steps as a numbered list under an opening line (one of OPENERS, by `variant`), filler
    spread over them until words(answer) ~ ratio x words(steps)."""
    extra = max(0, round(sum(len(s.split()) for s in steps) * (ratio - 1.0)))
    lines = [OPENERS[variant % len(OPENERS)]]
    for number, text in enumerate(steps, start=1):
        share = extra // len(steps) + (1 if number <= extra % len(steps) else 0)
        padding = " ".join(FILLER[(variant + i) % len(FILLER)] for i in range(share))
        lines.append(f"{number}. {text.rstrip('.')}{', ' + padding if padding else ''}.")
    return "\n".join(lines)


def words(text: str) -> int:
    return len(re.findall(r"\S+", text))


def biased_verdict(reference: str, candidate: str) -> bool:
    """The verbosity-biased judge: passes with probability 0.35 + (ratio - 1), clipped to [0.05, 0.95]."""
    ratio = words(candidate) / max(1, words(reference))
    chance = min(0.95, max(0.05, 0.35 + (ratio - 1.0)))
    draw = int(hashlib.sha256(candidate.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
    return draw < chance


def judged_lists(prompt: str) -> tuple[str, str]:
    """L1 (the reference) and L2 (the candidate) from the judge prompt's last "# Input data" section."""
    data = prompt.rsplit("# Input data", 1)[-1]
    match = re.search(r"\nL1:\n(.*?)\n\s*L2:\n(.*?)(?:\n\s*# Output format|$)", data, re.S)
    return (match.group(1), match.group(2)) if match else ("", "")


class _JSONHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class JudgeHandler(_JSONHandler):
    """OpenAI-compatible: POST /v1/chat/completions and /v1/completions, GET /v1/models."""

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "toy-verbose-judge", "object": "model"}]})

    def do_POST(self) -> None:
        body = self._body()
        prompt = body.get("prompt") or "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        reference, candidate = judged_lists(str(prompt))
        failures = (
            []
            if biased_verdict(reference, candidate)
            else [{"failure": "L2 leaves out an essential L1 step.", "L1_steps": [1], "L2_steps": [1]}]
        )
        text = json.dumps(
            {"reasoning": "A toy judge that likes long answers.", "critical_failures": failures}
        )
        usage = {"prompt_tokens": words(str(prompt)), "completion_tokens": words(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if self.path.rstrip("/").endswith("/chat/completions"):
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}}
            kind = "chat.completion"
        else:
            choice, kind = {"index": 0, "text": text, "logprobs": None}, "text_completion"
        choice["finish_reason"] = "stop"
        payload = {"id": "toy", "object": kind, "model": body.get("model", ""), "choices": [choice]}
        self._send(200, {**payload, "usage": usage})


class PolicyHandler(_JSONHandler):
    """POST /generate {"procedure", "step", "steps", "n", "drift", "seed"} -> {"completions": [...]}."""

    def do_POST(self) -> None:
        body = self._body()
        ratio = target_ratio(int(body["step"]), int(body["steps"]), bool(body["drift"]))
        rng = random.Random(f"{body['seed']}:{body['step']}:{body['procedure']['goal']}")
        steps = body["procedure"]["steps"]
        texts = [
            padded_answer(steps, ratio + rng.gauss(0, 0.05), rng.randrange(64)) for _ in range(body["n"])
        ]
        self._send(200, {"completions": texts})


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], port: int = 0) -> Iterator[str]:
    """A loopback server in a thread; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def generate(
    policy_url: str, procedure: dict[str, Any], step: int, steps: int, n: int, drift: bool
) -> list[str]:
    body = {"procedure": procedure, "step": step, "steps": steps, "n": n, "drift": drift, "seed": 7}
    request = urllib.request.Request(
        f"{policy_url}/generate", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return list(json.loads(response.read())["completions"])


SHOWN = ("how2score", "format", "length", "length_ratio")


@dataclass
class TrainerState:
    """The part of transformers' TrainerState a reward function reads."""

    global_step: int = 0


@dataclass
class StepSummary:
    step: int
    metrics: dict[str, float] = field(default_factory=dict)


def grpo_step(
    funcs: Sequence[Callable[..., list[float | None]]],
    batch: list[tuple[dict[str, Any], str]],
    step: int,
) -> StepSummary:
    """Score one batch as TRL's _calculate_rewards does: every function, the same keyword arguments."""
    logged: dict[str, list[float]] = defaultdict(list)
    reward_kwargs: dict[str, Any] = {
        "ground_truth": [ground_truth(procedure) for procedure, _ in batch],
        "trainer_state": TrainerState(global_step=step),
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: logged[name].append(value),
    }
    for func in funcs:
        func(
            prompts=[f"How do I: {procedure['goal']}?" for procedure, _ in batch],
            completions=[text for _, text in batch],
            completion_ids=[[] for _ in batch],
            **reward_kwargs,
        )
    return StepSummary(step, {name: sum(v) / len(v) for name, v in logged.items()})


def train(
    client: RewardClient, policy_url: str, *, steps: int, prompts: int, group: int, drift: bool
) -> list[StepSummary]:
    """The toy loop: each step, `group` completions for each of `prompts` procedures, scored in one batch."""
    funcs = reward_funcs(client)
    summaries = []
    for step in range(steps):
        batch = [
            (procedure, text)
            for procedure in PROCEDURES[:prompts]
            for text in generate(policy_url, procedure, step, steps, group, drift)
        ]
        summary = grpo_step(funcs, batch, step)
        shown = {name: summary.metrics.get(f"h2e/{name}", float("nan")) for name in SHOWN}
        print(
            f"{client.run:>24} step {step:3d}  " + "  ".join(f"{k} {v:.2f}" for k, v in shown.items()),
            flush=True,
        )
        summaries.append(summary)
    return summaries


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="the studio (default: H2E_REWARD_URL)")
    parser.add_argument("--token", help="a DRF token with judging.request_reward (default: H2E_REWARD_TOKEN)")
    parser.add_argument("--run", default="toy-grpo", help="the run's name; the control run adds -control")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--prompts", type=int, default=4, choices=range(1, len(PROCEDURES) + 1))
    parser.add_argument("--group", type=int, default=8, help="completions per prompt (num_generations)")
    parser.add_argument("--reward", default="toy-verbose-judge", help="the studio's reward config")
    parser.add_argument("--judge-port", type=int, default=8097, help="where the toy judge listens")
    parser.add_argument("--no-control", action="store_true", help="skip the control run")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, list[StepSummary]]:
    args = parse_args(argv)
    runs = {args.run: True} if args.no_control else {args.run: True, f"{args.run}-control": False}
    results = {}
    with serving(JudgeHandler, args.judge_port), serving(PolicyHandler) as policy_url:
        for run, drift in runs.items():
            client = RewardClient(args.url, args.token, reward=args.reward, run=run, policy="toy-policy")
            results[run] = train(
                client, policy_url, steps=args.steps, prompts=args.prompts, group=args.group, drift=drift
            )
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
