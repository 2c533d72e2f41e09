"""A stand-in for uvloop, for vLLM's OpenAI-compatible server only (--tags serve, roles/grpo_eval/tasks/serve.yml).

The guide's stack uninstalls uvloop (it clashes with Ray's asyncio loop), and vLLM 0.13's server module imports it
only to run its event loop (``uvloop.run(run_server(args))``); without it the server does not start. The serve job
puts this folder first on its PYTHONPATH when the stack has no uvloop, so the server and the engine process it
spawns run on asyncio's own loop; nothing else in the training environment sees it.
"""

from asyncio import new_event_loop, run  # noqa: F401  (uvloop's names for what the server calls)
