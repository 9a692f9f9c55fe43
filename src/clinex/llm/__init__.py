"""LLM backend shared by the three tasks: one client for OpenAI-compatible servers.

Modules, one job each:

* :mod:`clinex.llm.config` -- server settings (options, ``CLINEX_LLM_*`` environment);
* :mod:`clinex.llm.client` -- chat completions with JSON-schema output, repair, retries,
  backoff, a concurrency limit and usage counts;
* :mod:`clinex.llm.cache` -- the SQLite answer cache;
* :mod:`clinex.llm.grounding` -- every returned span located in the source text;
* :mod:`clinex.llm.prompts` -- prompt templates from ``clinex/resources/llm/*.yaml``;
* :mod:`clinex.llm.options` -- the ``--llm-*`` options of the task commands.

The task models are ``clinex.pv.models.llm``, ``clinex.rob.evidence.llm`` and
``clinex.cohort.llm`` (kind ``llm`` in each task's registry). This package knows no
task: it sits on the layer of :mod:`clinex.io` and :mod:`clinex.metrics`.
"""
