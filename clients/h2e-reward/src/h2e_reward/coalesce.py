"""One request for many concurrent one-item calls: open-instruct awaits its verifier once per completion,
and verl's reward loop its async compute_score once per sample, all at once. Items that arrive within
`window` seconds of the first (or until the client's batch size) go to the service together."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from h2e_reward.client import Answer, RewardClient

Pending = list[tuple[dict[str, Any], "asyncio.Future[Answer]"]]


@dataclass
class _Queue:
    items: Pending = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None
    sending: set[asyncio.Task[None]] = field(default_factory=set)


class Coalescer:
    def __init__(self, client: RewardClient, components: Sequence[str] | None, window: float = 0.05) -> None:
        self.client, self.components, self.window = client, components, window
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    async def score(self, item: dict[str, Any]) -> Answer:
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(loop, _Queue())
        future: asyncio.Future[Answer] = loop.create_future()
        queue.items.append((item, future))
        if len(queue.items) >= self.client.batch_size:
            self._flush(queue)
        elif queue.timer is None:
            queue.timer = loop.call_later(self.window, self._flush, queue)
        return await future

    def _flush(self, queue: _Queue) -> None:
        if queue.timer is not None:
            queue.timer.cancel()
            queue.timer = None
        batch, queue.items = queue.items, []
        if batch:
            task = asyncio.ensure_future(self._send(batch))
            queue.sending.add(task)
            task.add_done_callback(queue.sending.discard)

    async def _send(self, batch: Pending) -> None:
        try:
            answers = await self.client.ascore([item for item, _ in batch], self.components)
        except Exception as error:
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        for (_, future), answer in zip(batch, answers, strict=True):
            if not future.done():
                future.set_result(answer)
