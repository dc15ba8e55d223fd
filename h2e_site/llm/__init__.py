"""LLM backends: one small interface (base.py), three real implementations.

backends.backend_from_config picks the implementation of a config. The package imports none of them
(prompts.py, which every judge's id hashes with, is imported when the judging models load at start-up):
import from the modules.

- openai_http.OpenAICompatibleBackend: the OpenAI API, a `vllm serve` server, llama.cpp's server.
- vllm_offline.VLLMOfflineBackend: `vllm.LLM` in a Celery worker on the `gpu` queue (imported lazily).
- local: the embedded SmolLM2-135M-Instruct served by llama.cpp (`manage.py serve_local_llm`),
  reached through the OpenAI-compatible backend.
"""
