"""PHEE event extraction by a large language model behind an OpenAI-compatible server.

Sun et al. (EACL 2024) prompt ChatGPT for PHEE zero-shot and few-shot, the
demonstrations of each sentence being the training sentences BM25 ranks highest for
it. :class:`LLMExtractor` does the same for any server :mod:`clinex.llm` can reach:

* the prompt is data (``clinex/resources/llm/pv.yaml``): a system part describing the
  PHEE scheme, then ``shots`` demonstrations (a user turn with a training sentence,
  an assistant turn with its gold events as JSON), then the sentence;
* demonstrations come from a PHEE JSON training file, ranked by BM25 (``bm25s``,
  English stop words removed) against the sentence; a training sentence identical to
  the one annotated is never its own demonstration (it would hand the model the gold
  answer); ``shots = 0`` is zero-shot;
* the answer must follow :class:`PVAnswer` (its JSON schema is sent);
* identical events in one answer are kept once;
* every span of the answer is grounded in the sentence (:func:`clinex.llm.grounding.ground`):
  the trigger first -- at the occurrence nearest the event's own arguments that no
  earlier event's trigger took, so two events triggered by the same word ("developed
  ... developed") get the two occurrences -- then the arguments nearest the trigger,
  then each sub-argument inside its main argument. An event whose trigger cannot be
  grounded is dropped, and so is an argument or cue that cannot; each dropped span is
  counted (:attr:`LLMExtractor.grounding_`, and the ``LLM:`` line of the CLI).

The events are the model's own answer: no sentence gate or attribute-scope rules are
applied (those belong to the trained kinds, :mod:`clinex.pv.steps`).

Settings (server, model name, shots, training file) come from ``model.json`` of a
model folder (``{"kind": "llm", "base_url": ..., "model": ..., "shots": 5,
"train_file": "train.json"}``), overridden by the command line and the
``CLINEX_LLM_*`` environment (:mod:`clinex.llm.config`); ``--model llm`` uses the
command line and environment only. They are checked when the model is made (no
server URL or model name: :class:`~clinex.errors.LLMError` ``[CLX009]`` at once, so a
batch fails up front rather than once per item) and read again at each
:meth:`predict`, so a web server or batch run follows the environment it runs in.
The versioned id (:attr:`LLMExtractor.name`) names the server's model:
``clinex.pv.llm.v1:<model>``, so outputs and batch manifests tell two models apart.

References
----------
Sun Z. et al. "Leveraging ChatGPT in pharmacovigilance event extraction: an
empirical study", EACL 2024 (short papers), sections 3-4.
Sun Z. et al. "PHEE: A dataset for pharmacovigilance event extraction from text",
EMNLP 2022, appendix A (the scheme).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clinex.errors import ModelError
from clinex.pv.schema import SUB_ROLES
from clinex.pv.types import Argument, Attribute, Event, SentenceEvents
from clinex.text import Span

__all__ = ["LLMExtractor", "PVAnswer", "VERSION", "train_llm", "answer_of"]

VERSION = "clinex.pv.llm.v1"

_ANSWER = ConfigDict(extra="forbid")
SubRole = Literal["Age", "Gender", "Population", "Race", "Disorder", "Drug", "Dosage", "Freq", "Route",
                  "Time_elapsed", "Duration"]


class PVArgumentAnswer(BaseModel):
    """A main argument as the model gives it."""

    model_config = _ANSWER
    role: Literal["Subject", "Treatment", "Effect"]
    text: str


class PVSubArgumentAnswer(BaseModel):
    """A sub-argument, under main role ``main``."""

    model_config = _ANSWER
    main: Literal["Subject", "Treatment"]
    role: SubRole
    text: str


class PVSeverityAnswer(BaseModel):
    """A severity cue and its level."""

    model_config = _ANSWER
    cue: str
    level: Literal["High", "Medium", "Low"]


class PVEventAnswer(BaseModel):
    """One event as the model gives it (spans as quotes)."""

    model_config = _ANSWER
    event_type: Literal["Adverse_event", "Potential_therapeutic_event"]
    trigger: str
    arguments: list[PVArgumentAnswer] = Field(default_factory=list)
    sub_arguments: list[PVSubArgumentAnswer] = Field(default_factory=list)
    speculated: str | None = None
    negated: str | None = None
    severity: PVSeverityAnswer | None = None


class PVAnswer(BaseModel):
    """The answer to one sentence: its events (possibly none)."""

    model_config = _ANSWER
    events: list[PVEventAnswer]  # required: "[]" for a sentence without an event


def answer_of(item: SentenceEvents) -> PVAnswer:
    """The :class:`PVAnswer` a perfect model would give for a gold sentence (demonstrations)."""
    events = []
    for ev in item.events:
        subs = [PVSubArgumentAnswer(main=main, role=a.role, text=a.span.text)  # type: ignore[arg-type]
                for main, args in ev.sub_arguments.items() if main in SUB_ROLES
                for a in args if a.role in SUB_ROLES[main]]
        sev = ev.attribute("Severity")
        spec, neg = ev.attribute("Speculated"), ev.attribute("Negated")
        events.append(PVEventAnswer(
            event_type=ev.event_type,  # type: ignore[arg-type]
            trigger=ev.trigger.text,
            arguments=[PVArgumentAnswer(role=a.role, text=a.span.text)  # type: ignore[arg-type]
                       for a in ev.arguments if a.role in ("Subject", "Treatment", "Effect")],
            sub_arguments=subs,
            speculated=spec.cue.text if spec is not None and spec.cue is not None and spec.value is True else None,
            negated=neg.cue.text if neg is not None and neg.cue is not None and neg.value is True else None,
            severity=PVSeverityAnswer(cue=sev.cue.text, level=sev.value)  # type: ignore[arg-type]
            if sev is not None and sev.cue is not None and sev.value in ("High", "Medium", "Low") else None,
        ))
    return PVAnswer(events=events)


class _Demos:
    """BM25 index over the sentences of a PHEE JSON training file."""

    def __init__(self, path: Path) -> None:
        import bm25s

        from clinex.pv.formats.phee_json import read_phee_json

        self.items = [s for s in read_phee_json(path) if s.text.strip()]
        if not self.items:
            raise ModelError("the training file holds no sentence for demonstrations", path=path)
        self._bm25s = bm25s
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize([s.text for s in self.items], stopwords="en", show_progress=False),
                         show_progress=False)

    def top(self, text: str, k: int) -> list[SentenceEvents]:
        """The ``k`` training sentences BM25 ranks highest for ``text``, best first (none scoring 0).

        A training sentence equal to ``text`` (whitespace aside) is left out: annotating a
        training sentence must not show the model its own gold answer.
        """
        same = " ".join(text.split())
        n_same = sum(" ".join(s.text.split()) == same for s in self.items)
        k = min(k + n_same, len(self.items))
        words = self._bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]
        known = [w for w in words if w in self.index.vocab_dict]
        if not known:
            return []
        docs, scores = self.index.retrieve([known], k=k, show_progress=False)
        picked = [self.items[int(d)] for d, s in zip(docs[0], scores[0])
                  if s > 0 and " ".join(self.items[int(d)].text.split()) != same]
        return picked[: k - n_same]


_DEMOS: dict[str, _Demos] = {}
_DEMOS_LOCK = threading.Lock()


def _demos(path: Path) -> _Demos:
    key = f"{path.resolve()}@{path.stat().st_mtime_ns}" if path.is_file() else str(path)
    with _DEMOS_LOCK:
        if key not in _DEMOS:
            if not path.is_file():
                raise ModelError("no such training file for the demonstrations", path=path)
            _DEMOS[key] = _Demos(path)
        return _DEMOS[key]


class LLMExtractor:
    """PHEE events from an OpenAI-compatible server (the ``llm`` model kind).

    Parameters
    ----------
    options : dict, optional
        Settings of :class:`clinex.llm.config.LLMSettings` (``base_url``, ``model``,
        ``shots``, ``train_file``, ...) that the command line and the environment
        override (:func:`clinex.llm.config.resolve_settings`).
    prompt : str or Path, default "pv"
        The packaged prompt or a prompt file of your own.

    Attributes
    ----------
    name : str
        ``clinex.pv.llm.v1:<server model>`` (the versioned id every event and record names).
    grounding_ : GroundingStats
        Spans grounded and dropped by this model since it was made.

    Raises
    ------
    LLMError
        No server URL or model name configured (``[CLX009]``).
    InputError
        A setting that is not a number, out of range, or a bad key.
    """

    kind = "llm"

    #: The pipeline passes each record whole to :meth:`predict_records` and keeps the answer
    #: as it is: no sentence split, none of the sentence steps of :mod:`clinex.pv.steps`
    #: (the trained kinds, :class:`clinex.pv.steps.SentencePredictions`, are False).
    reads_whole_records = True

    def __init__(self, options: dict[str, Any] | None = None, *, prompt: str | Path = "pv") -> None:
        from clinex.llm.config import resolve_settings
        from clinex.llm.grounding import GroundingStats
        from clinex.llm.prompts import load_prompt

        self.options = dict(options or {})
        settings = resolve_settings(self.options)  # no server configured: CLX009 now, not per text
        self.prompt = load_prompt(prompt)
        self.name = f"{VERSION}:{settings.model}"
        self.grounding_ = GroundingStats()

    def __repr__(self) -> str:
        return f"LLMExtractor(prompt={self.prompt.id!r})"

    # ------------------------------------------------------------------ settings
    def client(self) -> Any:
        """The :class:`~clinex.llm.client.LLMClient` for the settings in force now."""
        from clinex.llm.client import shared_client
        from clinex.llm.config import resolve_settings

        return shared_client(resolve_settings(self.options))

    def messages(self, text: str, settings: Any) -> list[dict[str, str]]:
        """The chat messages for one sentence (system, demonstrations, the sentence)."""
        msgs = [{"role": "system", "content": self.prompt.render("system").strip()}]
        if settings.shots:
            if settings.train_file is None:
                raise ModelError("shots > 0 needs a training file: set CLINEX_LLM_PV_TRAIN or "
                                 "'train_file' in model.json", field="train_file")
            for demo in _demos(Path(settings.train_file)).top(text, settings.shots):
                msgs.append({"role": "user", "content": self.prompt.render("user", sentence=demo.text).strip()})
                msgs.append({"role": "assistant", "content": answer_of(demo).model_dump_json(exclude_none=True)})
        msgs.append({"role": "user", "content": self.prompt.render("user", sentence=text).strip()})
        return msgs

    # ------------------------------------------------------------------ prediction
    def _ground(self, client: Any, text: str, quote: str | None, label: str, *, hint: int | None = None,
                window: tuple[int, int] | None = None,
                avoid: frozenset[tuple[int, int]] = frozenset()) -> Span | None:
        from clinex.llm.grounding import ground

        if quote is None or not quote.strip():
            return None
        g = ground(text, quote, hint=hint, window=window, avoid=avoid)
        self.grounding_.add(g)
        client.count_grounding(g)
        if g is None:
            return None
        return Span.from_offsets(text, (g.start, g.end), label=label)

    def _events(self, client: Any, text: str, answer: PVAnswer) -> list[Event]:
        from clinex.llm.grounding import ground

        source = f"{VERSION}:{client.settings.model}"
        out = []
        taken: set[tuple[int, int]] = set()  # triggers of earlier events
        unique = list({e.model_dump_json(): e for e in answer.events}.values())  # identical events once
        for ev in unique:
            # where the event's arguments are (uncounted look-up): its trigger is the free
            # occurrence nearest them
            found = [g.start for g in (ground(text, a.text) for a in ev.arguments) if g is not None]
            near = sorted(found)[len(found) // 2] if found else None
            trigger = self._ground(client, text, ev.trigger, "Trigger", hint=near, avoid=frozenset(taken))
            if trigger is None:
                # the event's other spans are dropped with it, and counted
                n = len(ev.arguments) + len(ev.sub_arguments)
                for _ in range(n):
                    self.grounding_.add(None)
                    client.count_grounding(None)
                continue
            taken.add((trigger.start, trigger.end))
            args, mains = [], {}
            for a in ev.arguments:
                span = self._ground(client, text, a.text, a.role, hint=trigger.start)
                if span is not None:
                    args.append(Argument(role=a.role, span=span))
                    mains.setdefault(a.role, span)
            subs: dict[str, list[Argument]] = {}
            for s in ev.sub_arguments:
                parent = mains.get(s.main)
                window = (parent.start, parent.end) if parent is not None else None
                hint = parent.start if parent is not None else trigger.start
                span = self._ground(client, text, s.text, s.role, hint=hint, window=window)
                if span is not None and s.role in SUB_ROLES[s.main]:
                    subs.setdefault(s.main, []).append(Argument(role=s.role, span=span))
            attrs = []
            for name, cue_text, value in (("Speculated", ev.speculated, True), ("Negated", ev.negated, True),
                                          ("Severity", ev.severity.cue if ev.severity else None,
                                           ev.severity.level if ev.severity else None)):
                cue = self._ground(client, text, cue_text, name, hint=trigger.start)
                if cue is not None:
                    attrs.append(Attribute(name=name, value=value, cue=cue, source="model"))  # type: ignore[arg-type]
            out.append(Event(
                event_type=ev.event_type, trigger=trigger, arguments=tuple(args),
                sub_arguments={k: tuple(v) for k, v in subs.items()}, attributes=tuple(attrs), source=source,
            ))
        return out

    def predict(self, texts: Sequence[str], ids: Sequence[str] | None = None) -> list[list[Event]]:
        """Events of each text (offsets into that text); one request per non-blank text.

        Parameters
        ----------
        texts : sequence of str
        ids : sequence of str, optional
            Record ids, for messages (``record a2``); without them a text is named by
            its position (``text 2 of 3``).

        Raises
        ------
        LLMError
            The server cannot be reached or gives no valid answer for a text (the
            first such error; names the record, never shows the text).
        """
        out = []
        for res in self.predict_records(texts, ids):
            if isinstance(res, Exception):
                raise res
            out.append(res)
        return out

    def predict_records(self, texts: Sequence[str], ids: Sequence[str] | None = None) -> list[Any]:
        """Like :meth:`predict`, but a text whose call fails gives its :class:`~clinex.errors.LLMError`
        in its place instead of stopping the others.

        :func:`clinex.pv.pipeline.extract_records` uses it so that ``clinex pv extract``
        reports and skips the failed record (by id) and writes the others (docs/pv.md
        exit rules). An error every record would meet (server down, wrong URL or
        model, key or response format refused: ``systemic``) is raised at once.

        Returns
        -------
        list of (list of Event or LLMError)
            One per text, in order; blank texts give ``[]`` without a request.
        """
        from clinex.errors import LLMError
        from clinex.llm.config import resolve_settings

        client = self.client()
        settings = resolve_settings(self.options)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        names = [f"record {r}" for r in ids] if ids is not None and len(ids) == len(texts) else [
            f"text {i + 1} of {len(texts)}" for i in range(len(texts))]

        def one(i: int) -> Any:
            try:
                answer = client.complete_json(self.messages(texts[i], settings), PVAnswer,
                                              document=names[i], name="pv_events")
            except LLMError as exc:
                if getattr(exc, "systemic", False):
                    raise  # server down, wrong model, key refused: every record would fail; stop now
                return exc
            return self._events(client, texts[i], answer)

        results = dict(zip(todo, client.map(one, todo)))
        return [results.get(i, []) for i in range(len(texts))]

    # ------------------------------------------------------------------ folders
    def save(self, path: str | Path) -> Path:
        """Write ``model.json`` (``kind``, ``version`` and the options; never a key)."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        opts = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.options.items() if k != "api_key"}
        from clinex.io.atomic import write_atomic

        write_atomic(folder / "model.json", json.dumps({"kind": "llm", "version": 1, **opts}, indent=1) + "\n",
                     force=True)
        return folder

    @classmethod
    def load(cls, path: str | Path) -> "LLMExtractor":
        """Read a model folder; a relative ``train_file`` or ``prompt`` is relative to it.

        Raises
        ------
        ModelError
            ``model.json`` missing, not an object, or holding an ``api_key``
            (keys belong in ``CLINEX_LLM_API_KEY``, not in a file).
        """
        folder = Path(path)
        meta_path = folder / "model.json"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise ModelError("cannot read model.json as a JSON object", path=meta_path) from None
        if not isinstance(meta, dict) or meta.get("kind") != "llm":
            raise ModelError("not an llm model folder", path=meta_path, field="kind")
        if "api_key" in meta:
            raise ModelError("model.json must not hold an API key; set CLINEX_LLM_API_KEY", path=meta_path,
                             field="api_key")
        opts = {k: v for k, v in meta.items() if k not in ("kind", "version", "prompt")}
        if isinstance(opts.get("train_file"), str) and not Path(opts["train_file"]).is_absolute():
            opts["train_file"] = str(folder / opts["train_file"])
        prompt = meta.get("prompt", "pv")
        if isinstance(prompt, str) and prompt.endswith((".yaml", ".yml")) and not Path(prompt).is_absolute():
            prompt = str(folder / prompt)
        return cls(opts, prompt=prompt)


def train_llm(train: Any, dev: Any, out: Path, **params: Any) -> LLMExtractor:
    """Not a training: writes a model folder whose demonstrations come from ``params['train_file']``.

    Raises
    ------
    ModelError
        Always when ``train_file`` is not given: an LLM kind learns nothing from
        ``clinex pv train``; write ``model.json`` by hand (see ``docs/llm.md``).
    LLMError
        No server configured (the folder is written all the same).
    """
    if "train_file" not in params:
        raise ModelError("the llm kind is not trained; make a folder with model.json {\"kind\": \"llm\", ...} "
                         "(docs/llm.md)")
    # the folder is written first: loading it checks the server settings (LLMError when none)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    opts = {k: (str(v) if isinstance(v, Path) else v) for k, v in params.items() if k != "api_key"}
    from clinex.io.atomic import write_atomic

    write_atomic(folder / "model.json", json.dumps({"kind": "llm", "version": 1, **opts}, indent=1) + "\n",
                 force=True)
    return LLMExtractor.load(out)
