"""RoB 2 signalling questions answered by a large language model (the ``llm`` evidence kind).

RoBuster (Wang et al.) asks GPT-3.5 each signalling question (SQ) with the instruction
"answer the question + extract the sentence supporting the answer" and scores
observed agreement on the response and on the extracted sentence.
:class:`LLMEvidenceModel` does the same against any OpenAI-compatible server
(:mod:`clinex.llm`):

1. the report is cut into **parts that fit the model's context**
   (:meth:`LLMEvidenceModel.parts`): the document's sections
   (:func:`clinex.rob.sections.detect_sections` when it has none) are packed, in
   order, into parts of at most :func:`part_budget` characters; a section longer than
   that is cut at sentence ends;
2. **one prompt per SQ and part** (``clinex/resources/llm/rob.yaml``): the SQ's official
   wording with its domain, then the part; the answer follows :class:`RoBAnswer`:
   ``Y``/``PY``/``PN``/``N``/``NI`` and the supporting sentences, word for word;
3. every sentence is **grounded** in the report (:func:`clinex.llm.grounding.ground`,
   the part as the window); an ungrounded one is dropped and counted;
4. with several parts, the SQ takes the answer of the first part (in document
   order) that is not NI and has grounded evidence (clinex's own rule: a part that
   does not mention the practice says nothing against another that does);
5. **no grounded evidence, no answer**: when no part gives an answer other than NI
   with at least one grounded sentence -- the model quoted nothing, or every quote
   was invented -- the SQ is answered NI (confidence 0), however sure the model
   sounded. RoB 2 asks for the reported practice; an answer the report cannot be
   shown to support is "no information", the conservative reading a reviewer
   expects (clinex's own rule). Each such downgrade is counted
   (:attr:`LLMEvidenceModel.downgraded_`, and "answers ... downgraded" in the ``LLM:``
   line of the CLI);
6. :func:`clinex.rob.assess.assess` then applies the RoB 2 algorithms as for every
   evidence model (questions RoB 2 does not ask become NA there).

Confidence is 1.0 for an answer with grounded evidence and 0.0 for NI (own choice:
the model gives no calibrated probability).

The versioned id (:attr:`LLMEvidenceModel.name`) names the server's model,
``clinex.rob.llm.v1:<model>``; making the model without a server URL or model name
configured raises :class:`~clinex.errors.LLMError` ``[CLX009]`` at once.

References
----------
Wang et al. "RoBuster: a corpus annotated with risk of bias text spans in randomized
controlled trials" (the prompt and the PO_response / PO_extraction scores).
Sterne JAC et al. RoB 2, BMJ 2019;366:l4898 (questions and responses).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clinex.rob.types import Evidence, SQAnswer
from clinex.text import Document, Span

__all__ = ["LLMEvidenceModel", "RoBAnswer", "VERSION", "part_budget", "CHARS_PER_TOKEN", "PROMPT_RESERVE"]

VERSION = "clinex.rob.llm.v1"

CHARS_PER_TOKEN = 3
"""Characters counted per token when cutting a report to the context: English
clinical prose runs at about 4 characters per token with common BPE vocabularies;
3 leaves room for numbers, tables and names, which split into more tokens (own
conservative choice)."""

PROMPT_RESERVE = 400
"""Tokens kept for the instructions and the question around the report part (the
packaged prompt is about 200 words)."""


class RoBAnswer(BaseModel):
    """The answer to one SQ over one part of a report."""

    model_config = ConfigDict(extra="forbid")
    answer: Literal["Y", "PY", "PN", "N", "NI"]
    evidence: list[str] = Field(default_factory=list)


def part_budget(context_tokens: int, max_tokens: int) -> int:
    """Characters of report text per prompt: ``(context - answer - reserve) * CHARS_PER_TOKEN``, at least 500."""
    return max(500, (context_tokens - max_tokens - PROMPT_RESERVE) * CHARS_PER_TOKEN)


class LLMEvidenceModel:
    """RoB 2 answers from an OpenAI-compatible server.

    Parameters
    ----------
    options : dict, optional
        :class:`clinex.llm.config.LLMSettings` values the command line and environment
        override.
    prompt : str or Path, default "rob"
        The packaged prompt or a prompt file.

    Attributes
    ----------
    grounding_ : GroundingStats
        Evidence sentences grounded and dropped since the model was made.
    downgraded_ : list of (str, str, str)
        ``(document id, SQ, the model's answer)`` of each answer turned to NI for want
        of grounded evidence.

    Raises
    ------
    LLMError
        No server URL or model name configured (``[CLX009]``).
    """

    kind = "llm"

    def __init__(self, options: dict[str, Any] | None = None, *, prompt: str | Path = "rob") -> None:
        from clinex.llm.config import resolve_settings
        from clinex.llm.grounding import GroundingStats
        from clinex.llm.prompts import load_prompt

        self.options = dict(options or {})
        self._model_name = resolve_settings(self.options).model  # no server configured: CLX009 now
        self.prompt = load_prompt(prompt)
        self.grounding_ = GroundingStats()
        self.downgraded_: list[tuple[str, str, str]] = []

    @property
    def name(self) -> str:
        """``clinex.rob.llm.v1:<server model>`` (also named in each evidence's source)."""
        return f"{VERSION}:{self._model_name}"

    def client(self) -> Any:
        """The client for the settings in force now (command line, environment, options)."""
        from clinex.llm.client import shared_client
        from clinex.llm.config import resolve_settings

        return shared_client(resolve_settings(self.options))

    def parts(self, document: Document, budget: int) -> list[tuple[int, int, str]]:
        """``(start, end, label)`` of the parts of ``document`` sent per prompt (see the module docstring)."""
        from clinex.rob.evidence.segment import document_sections

        text = document.text
        sections = sorted(document_sections(document), key=lambda s: s.start)
        pieces: list[tuple[int, int, str]] = []
        pos = 0
        for s in sections:
            if s.start > pos and text[pos : s.start].strip():
                pieces.append((pos, s.start, "front"))
            if s.end > max(pos, s.start):
                pieces.append((max(pos, s.start), s.end, s.label or "section"))
            pos = max(pos, s.end)
        if text[pos:].strip() or not pieces:
            pieces.append((pos, len(text), "end" if pieces else "text"))
        sentence_ends = sorted({sp.end for sp in document.iter_sentences()})
        cut: list[tuple[int, int, str]] = []
        for start, end, label in pieces:
            while end - start > budget:
                stops = [e for e in sentence_ends if start < e <= start + budget]
                stop = stops[-1] if stops else start + budget
                cut.append((start, stop, label))
                start = stop
            if text[start:end].strip():
                cut.append((start, end, label))
        parts: list[tuple[int, int, str]] = []
        for start, end, label in cut:
            if parts and end - parts[-1][0] <= budget:
                s0, _, l0 = parts[-1]
                parts[-1] = (s0, end, l0 if l0 == label else f"{l0} .. {label}")
            else:
                parts.append((start, end, label))
        return parts

    def _ask(self, client: Any, document: Document, q: Any, part: tuple[int, int, str], n: int, i: int) -> SQAnswer:
        from clinex.llm.grounding import ground
        from clinex.rob.schema import domain

        start, end, label = part
        where = f"part {i + 1} of {n}: {label}" if n > 1 else label
        dom = domain(q.domain)
        messages = [
            {"role": "system", "content": self.prompt.render("system").strip()},
            {"role": "user", "content": self.prompt.render(
                "user", sq=q.id, domain=q.domain, domain_name=dom.name, question=q.full_text, part=where,
                text=document.text[start:end]).strip()},
        ]
        ans = client.complete_json(messages, RoBAnswer, document=f"{document.id} (SQ {q.id}, {where})",
                                   name="rob_answer")
        evidence = []
        source = f"{VERSION}:{client.settings.model}"
        seen = set()
        for quote in ans.evidence if ans.answer != "NI" else []:
            g = ground(document.text, quote, window=(start, end), hint=start)
            self.grounding_.add(g)
            client.count_grounding(g)
            if g is None or (g.start, g.end) in seen:
                continue
            seen.add((g.start, g.end))
            evidence.append(Evidence(span=Span.from_offsets(document.text, (g.start, g.end), label=q.id),
                                     page=document.page_of(g.start), score=round(g.score / 100.0, 4),
                                     source=source))
        confidence = 1.0 if ans.answer != "NI" and evidence else 0.0
        return SQAnswer(sq=q.id, response=ans.answer, confidence=confidence, evidence=tuple(evidence))

    def predict(self, document: Document) -> dict[str, SQAnswer]:
        """Answers to the 22 SQs (one request per SQ and part; cached answers need none).

        Raises
        ------
        LLMError
            The server cannot be reached or gives no valid answer (names the server,
            the document, the SQ and the part).
        """
        from clinex.rob.schema import SIGNALLING_QUESTIONS

        client = self.client()
        s = client.settings
        parts = self.parts(document, part_budget(s.context_tokens, s.max_tokens))
        jobs = [(q, k) for q in SIGNALLING_QUESTIONS for k in range(len(parts))]
        answers = client.map(lambda job: self._ask(client, document, job[0], parts[job[1]], len(parts), job[1]), jobs)
        by_sq: dict[str, list[SQAnswer]] = {}
        for (q, _), a in zip(jobs, answers):
            by_sq.setdefault(q.id, []).append(a)
        out = {}
        for q_id, cands in by_sq.items():
            informative = [a for a in cands if a.response != "NI"]
            grounded = [a for a in informative if a.evidence]
            if grounded:
                out[q_id] = grounded[0]
            elif informative:  # an answer the report cannot be shown to support: NI
                self.downgraded_.append((document.id, q_id, informative[0].response))
                client.count_downgrade()
                out[q_id] = SQAnswer(sq=q_id, response="NI", confidence=0.0)
            else:
                out[q_id] = cands[0]
        return out

    def save(self, path: str | Path) -> Path:
        """Write the options as JSON (never the key)."""
        p = Path(path)
        opts = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.options.items() if k != "api_key"}
        from clinex.io.atomic import write_atomic

        write_atomic(p, json.dumps({"kind": "llm", "version": 1, **opts}, indent=1) + "\n", force=True)
        return p

    @classmethod
    def load(cls, path: str | Path) -> "LLMEvidenceModel":
        """Read options written by :meth:`save` (``kind: llm``); the server comes from them,
        the command line and ``CLINEX_LLM_*``.

        Raises
        ------
        ModelError
            Not a JSON object of kind ``llm``, or holding an ``api_key`` (keys belong in
            ``CLINEX_LLM_API_KEY``, not in a file).
        LLMError
            No server URL or model name configured (``[CLX009]``).
        """
        from clinex.errors import ModelError

        p = Path(path)
        try:
            meta = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise ModelError("cannot read the model file as a JSON object", path=p) from None
        if not isinstance(meta, dict) or meta.get("kind") != "llm":
            raise ModelError("not an llm model file", path=p, field="kind")
        if "api_key" in meta:
            raise ModelError("the model file must not hold an API key; set CLINEX_LLM_API_KEY", path=p,
                             field="api_key")
        return cls({k: v for k, v in meta.items() if k not in ("kind", "version")})
