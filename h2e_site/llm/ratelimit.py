"""Client-side pacing for a provider's requests-per-minute and tokens-per-minute limits.

Request starts are spaced evenly (a leaky bucket with no burst): at 600 requests/minute one request may start
every 0.1 s, so the limit holds over any window, however short. Tokens are paced the same way: a request
estimated at `t` tokens holds the token budget for `t * 60 / tokens_per_minute` seconds; once the response
reports its real usage the difference is given back (or charged). A 429 with Retry-After pauses every
request, not only the one that got it.
"""

from __future__ import annotations

import threading
import time


class RateLimiter:
    def __init__(self, requests_per_minute: int | None, tokens_per_minute: int | None) -> None:
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("max_requests_per_minute must be positive")
        if tokens_per_minute is not None and tokens_per_minute <= 0:
            raise ValueError("max_tokens_per_minute must be positive")
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._lock = threading.Lock()
        self._next_request_at = 0.0  # time.monotonic() at which the next request may start
        self._tokens_free_at = 0.0  # ... at which the token budget of the requests so far is spent
        self._paused_until = 0.0

    @property
    def limited(self) -> bool:
        return self.requests_per_minute is not None or self.tokens_per_minute is not None

    def acquire(self, tokens: int, stop: threading.Event) -> bool:
        """Block until a request of about `tokens` tokens may start. False when `stop` was set meanwhile."""
        while True:
            delay = self._reserve(tokens)
            if delay > 0 and stop.wait(delay):
                return False
            if stop.is_set():
                return False
            with self._lock:
                if time.monotonic() >= self._paused_until:
                    return True
            # a 429 paused everyone after our slot was reserved: take a new slot after the pause

    def _reserve(self, tokens: int) -> float:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._paused_until)
            if self.requests_per_minute is not None:
                start = max(start, self._next_request_at)
                self._next_request_at = start + 60.0 / self.requests_per_minute
            if self.tokens_per_minute is not None:
                start = max(start, self._tokens_free_at)
                cost = min(tokens, self.tokens_per_minute)
                self._tokens_free_at = start + cost * 60.0 / self.tokens_per_minute
            return start - now

    def correct(self, estimated_tokens: int, actual_tokens: int) -> None:
        """The request used `actual_tokens`, not the `estimated_tokens` reserved (0 when it failed)."""
        if self.tokens_per_minute is None:
            return
        with self._lock:
            estimated = min(estimated_tokens, self.tokens_per_minute)
            self._tokens_free_at += (actual_tokens - estimated) * 60.0 / self.tokens_per_minute

    def pause(self, seconds: float) -> None:
        """The server asked us to slow down: no request starts for `seconds`."""
        with self._lock:
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)
