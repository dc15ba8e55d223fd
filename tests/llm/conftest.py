from tests.llm_server import llm_server
from tests.local_llm import local_llm_url

__all__ = ["llm_server", "local_llm_url"]
