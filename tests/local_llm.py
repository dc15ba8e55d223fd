"""The embedded model (SmolLM2 behind llama.cpp's server) for tests: the `local_llm_url` fixture in
tests/conftest.py uses these.

It reuses a server already answering at H2E_LOCAL_LLM_URL, otherwise starts one on a free port for the
session and stops it at the end; skips when the local-llm extra is not installed. The model is slow on 2 cores
(~20 s per judge call): keep the calls few and their max_tokens small.
"""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
