"""The transformer PHEE extractor: tag coding, and end-to-end training of a tiny random BERT.

The encoder is built here (BertConfig with tiny sizes, a WordPiece vocabulary written to
tmp_path), so nothing is downloaded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from clinex.errors import ModelError  # noqa: E402
from clinex.pv.models.encoders import resolve_encoder  # noqa: E402
from clinex.pv.models.transformer import (  # noqa: E402
    LAYERS,
    TransformerExtractor,
    decode_tags,
    encode_tags,
    quick_scores,
    train_transformer,
    viterbi_tags,
)
from clinex.pv.types import Argument, Attribute, Combination, Event, SentenceEvents  # noqa: E402
from clinex.text import Span  # noqa: E402

WORDS = (
    "a 54 - year - old man treated with amiodarone developed thyrotoxicosis . "
    "woman given lithium and metoprolol had tremor rash after heparin induced "
    "thrombocytopenia may not severe cause caused patient the of"
).split()


def _sentence(sid: str, text: str, events: list[dict]) -> SentenceEvents:
    def sp(word: str, nth: int = 0) -> Span:
        start = -1
        for _ in range(nth + 1):
            start = text.index(word, start + 1)
        return Span.from_offsets(text, (start, start + len(word)))

    evs = []
    for e in events:
        attrs = tuple(
            Attribute(name=n, value=v, cue=sp(c)) for n, v, c in e.get("attrs", [])
        )
        combos = tuple(
            Combination(trigger=sp(t), drugs=tuple(Argument(role="Drug", span=sp(d)) for d in ds))
            for t, ds in e.get("comb", [])
        )
        evs.append(
            Event(
                event_type=e["type"],
                trigger=sp(e["trigger"]),
                arguments=tuple(Argument(role=r, span=sp(w)) for r, w in e["args"]),
                sub_arguments={
                    m: tuple(Argument(role=r, span=sp(w)) for r, w in subs)
                    for m, subs in e.get("subs", {}).items()
                },
                combinations=combos,
                attributes=attrs,
            )
        )
    return SentenceEvents(id=sid, text=text, events=tuple(evs))


def _corpus() -> list[SentenceEvents]:
    return [
        _sentence(
            "s1",
            "a man treated with amiodarone developed thyrotoxicosis .",
            [
                {
                    "type": "Adverse_event",
                    "trigger": "developed",
                    "args": [("Subject", "a man"), ("Treatment", "amiodarone"), ("Effect", "thyrotoxicosis")],
                    "subs": {"Subject": [("Gender", "man")], "Treatment": [("Drug", "amiodarone")]},
                }
            ],
        ),
        _sentence(
            "s2",
            "lithium may cause severe tremor .",
            [
                {
                    "type": "Adverse_event",
                    "trigger": "cause",
                    "args": [("Treatment", "lithium"), ("Effect", "tremor")],
                    "subs": {"Treatment": [("Drug", "lithium")]},
                    "attrs": [("Speculated", True, "may"), ("Severity", "High", "severe")],
                }
            ],
        ),
        _sentence(
            "s3",
            "heparin induced thrombocytopenia .",
            [
                {
                    "type": "Adverse_event",
                    "trigger": "induced",
                    "args": [("Treatment", "heparin"), ("Effect", "thrombocytopenia")],
                    "subs": {"Treatment": [("Drug", "heparin")]},
                }
            ],
        ),
        _sentence(
            "s4",
            "woman given lithium and metoprolol had rash .",
            [
                {
                    "type": "Adverse_event",
                    "trigger": "had",
                    "args": [("Subject", "woman"), ("Treatment", "lithium and metoprolol"), ("Effect", "rash")],
                    "subs": {"Treatment": [("Drug", "lithium"), ("Drug", "metoprolol")]},
                    "comb": [("and", ["lithium", "metoprolol"])],
                }
            ],
        ),
    ]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight 2-layer BERT with a 40-word WordPiece vocabulary, saved locally."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny_bert")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS), "##s", "##ed"]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast.from_pretrained(str(path), local_files_only=True, do_lower_case=True)
    tok.save_pretrained(str(path))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(str(path))
    return path


def test_encode_decode_round_trip_discontinuous() -> None:
    text = "lithium and metoprolol tremor"
    offsets = [(0, 0), (0, 7), (8, 11), (12, 22), (23, 29), (0, 0)]
    disc = Span.from_offsets(text, [(0, 7), (23, 29)])
    labels = LAYERS["main"]
    tags = encode_tags(offsets, [("Effect", disc), ("Treatment", Span.from_offsets(text, (12, 22)))], labels)
    k_eff, k_trt = labels.index("Effect"), labels.index("Treatment")
    assert tags == [-100, 1 + 3 * k_eff, 0, 1 + 3 * k_trt, 3 + 3 * k_eff, -100]
    spans = decode_tags(text, offsets, tags, labels)
    assert [(lab, sp.offsets()) for lab, sp, _ in spans] == [
        ("Effect", [(0, 7), (23, 29)]),
        ("Treatment", [(12, 22)]),
    ]
    assert spans[0][1].text == "lithium tremor"


def test_decode_widens_subwords_and_repairs_orphan_inside() -> None:
    text = "thrombocytopenias"
    offsets = [(0, 10), (10, 17)]
    # An I tag with no B before it opens a span; the word is never cut.
    spans = decode_tags(text, offsets, [0, 2], LAYERS["main"])
    assert [(lab, sp.offsets()) for lab, sp, _ in spans] == [("Subject", [(0, 17)])]


def test_join_adjacent_reads_touching_begin_as_inside() -> None:
    text = "the patient, depot neuroleptics-lithium"
    offsets = [(0, 3), (4, 11), (11, 12), (13, 18), (19, 31), (31, 32), (32, 39)]
    labels = LAYERS["main"]
    b, k = 1 + 3 * labels.index("Subject"), 1 + 3 * labels.index("Treatment")
    # B-Subject B-Subject O B-Treatment B-Treatment B-Treatment(-) B-Treatment
    tags = [b, b, 0, k, k, k, k]
    plain = decode_tags(text, offsets, tags, labels)
    assert [sp.text for _, sp, _ in plain] == ["the", "patient", "depot", "neuroleptics", "-", "lithium"]
    joined = decode_tags(text, offsets, tags, labels, join_adjacent=True)
    # Only whitespace (or nothing) between two tagged tokens of one label joins them;
    # the O comma separates "patient" from "depot"; a hyphen token is a token of its own span.
    assert [(lab, sp.text) for lab, sp, _ in joined] == [
        ("Subject", "the patient"),
        ("Treatment", "depot neuroleptics-lithium"),
    ]
    # Different labels never join.
    mixed = decode_tags(text, offsets, [b, k, 0, 0, 0, 0, 0], labels, join_adjacent=True)
    assert [(lab, sp.text) for lab, sp, _ in mixed] == [("Subject", "the"), ("Treatment", "patient")]


def test_join_adjacent_layers_parameter(tiny_bert: Path) -> None:
    assert TransformerExtractor(tiny_bert)._join_layers() == {"main", "sub"}
    assert TransformerExtractor(tiny_bert, join_adjacent="")._join_layers() == frozenset()
    assert TransformerExtractor(tiny_bert, join_adjacent="trigger, attr")._join_layers() == {"trigger", "attr"}
    with pytest.raises(ModelError, match="join_adjacent must be"):
        TransformerExtractor(tiny_bert, join_adjacent="main,nope").fit(_corpus())


def test_viterbi_never_opens_with_inside() -> None:
    import numpy as np

    # tags O, B-X, I-X, C-X; per-token argmax would be O, I-X (an orphan I).
    probs = np.array([[0.5, 0.1, 0.4, 0.0], [0.05, 0.05, 0.9, 0.0]]) + 1e-12
    assert viterbi_tags(np.log(probs), 1) == [1, 2]  # B I: log .1 + log .9 beats O O / O B
    one = np.log(np.array([[0.05, 0.06, 0.89, 0.0]]) + 1e-12)
    assert viterbi_tags(one, 1) == [1]  # I cannot open a sequence: the next best, B
    assert viterbi_tags(np.zeros((0, 4)), 1) == []


def test_trigger_fallback_takes_most_trigger_like_word() -> None:
    import numpy as np

    text = "Lithium tremor developed"
    offsets = [(0, 0), (0, 7), (8, 14), (15, 24), (0, 0)]
    # tags: O, B/I/C-Adverse_event, B/I/C-Potential_therapeutic_event
    probs = np.full((5, 7), 0.0)
    probs[:, 0] = [1.0, 0.9, 0.8, 0.6, 1.0]
    probs[3, 1], probs[3, 4] = 0.3, 0.1  # "developed": not-O mass 0.4, mostly ADE
    probs[2, 4] = 0.2
    m = TransformerExtractor(trigger_fallback=0.3)
    ((label, span, score),) = m._fallback_trigger(text, offsets, probs)
    assert (label, span.offsets(), round(score, 6)) == ("Adverse_event", [(15, 24)], 0.4)
    assert TransformerExtractor(trigger_fallback=0.5)._fallback_trigger(text, offsets, probs) == []


def test_quick_scores_hand_computed() -> None:
    gold = _corpus()[:2]
    pred = [list(gold[0].events), []]  # first sentence perfect, second empty
    s = quick_scores(gold, pred)
    # triggers: tp 1, gold 2, pred 1 -> P 1, R 0.5, F1 2/3
    assert s["trigger"] == pytest.approx(2 / 3)
    # main: tp 3, gold 5, pred 3 -> F1 = 2*1*0.6/1.6 = 0.75
    assert s["main"] == pytest.approx(0.75)
    # attributes: gold 2, pred 0 -> 0
    assert s["attr"] == 0.0


def test_resolve_encoder_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="config.json"):
        resolve_encoder(tmp_path)
    assert (resolve_encoder("minilm") / "config.json").is_file()


def test_unfitted_and_bad_params(tiny_bert: Path) -> None:
    with pytest.raises(ModelError, match="not fitted"):
        TransformerExtractor(tiny_bert).predict(["x"])
    with pytest.raises(ModelError, match="variant"):
        TransformerExtractor(tiny_bert, variant="nope").fit(_corpus())


@pytest.mark.parametrize(("variant", "freeze"), [("pairwise", 0), ("conditioned", 0), ("joint", 0)])
def test_tiny_bert_trains_predicts_saves_loads(
    tiny_bert: Path, tmp_path: Path, variant: str, freeze: int
) -> None:
    corpus = _corpus()
    out = tmp_path / "model"
    model = train_transformer(
        corpus,
        corpus,
        out,
        encoder=str(tiny_bert),
        variant=variant,
        freeze_layers=freeze,
        epochs=25,
        batch_size=4,
        lr=3e-3,
        head_lr=1e-2,
        warmup=0.0,
        dropout=0.0,
        patience=25,
        threads=1,
        attributes="model",
    )
    meta = json.loads((out / "model.json").read_text())
    assert meta["kind"] == "transformer" and meta["params"]["variant"] == variant
    assert meta["attribute_lexicon"] is None
    assert (out / "MODEL_CARD.md").read_text().count("| epoch |") == 1
    texts = [s.text for s in corpus]
    pred = model.predict(texts)
    scores = quick_scores(corpus, pred)
    # A tiny corpus is memorised: triggers and main arguments come back exactly.
    assert scores["trigger"] == 1.0
    assert scores["main"] == 1.0
    ev = pred[1][0]
    assert ev.trigger.text == "cause" and ev.trigger.start == texts[1].index("cause")
    assert {(a.name, a.value, a.cue.text) for a in ev.attributes} == {
        ("Speculated", True, "may"),
        ("Severity", "High", "severe"),
    }
    again = TransformerExtractor.load(out).predict(texts)
    # fp16-stored encoder: same events after reloading.
    assert [[(e.event_type, e.trigger.offsets(), [a.span.offsets() for a in e.arguments]) for e in p] for p in again] == [
        [(e.event_type, e.trigger.offsets(), [a.span.offsets() for a in e.arguments]) for e in p] for p in pred
    ]


def test_frozen_blocks_are_cached_and_unchanged(tiny_bert: Path) -> None:
    from clinex.pv.models.encoders import load_encoder

    corpus = _corpus()
    model = TransformerExtractor(
        tiny_bert, freeze_layers=1, epochs=3, batch_size=2, lr=1e-2, warmup=0.0, threads=1
    ).fit(corpus, corpus)
    # Dev predictions made from cached hidden states equal a fresh full pass.
    assert model.dev_predictions_ == [evs for evs, _ in model.predict_ungated([s.text for s in corpus])]
    before = load_encoder(tiny_bert).state_dict()
    after = model.net_.encoder.state_dict()
    frozen = [k for k in before if k.startswith(("embeddings.", "encoder.layer.0."))]
    trained = [k for k in before if k.startswith("encoder.layer.1.") and k.endswith("weight")]
    assert frozen and trained
    assert all(torch.equal(before[k], after[k]) for k in frozen)
    assert any(not torch.equal(before[k], after[k]) for k in trained)
    # The cached path (block 1 on block 0's output) equals the full encoder.
    batch = model._collate(model._tokenize([s.text for s in corpus]), torch.device("cpu"))
    model.net_.eval()
    with torch.no_grad():
        full = model.net_.encode(batch["input_ids"], batch["attention_mask"])
        hs = model.net_.encoder(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True
        ).hidden_states
        top = model.net_.encode_top(hs[1], batch["attention_mask"], 1)
    mask = batch["attention_mask"].bool()
    assert torch.allclose(full[mask], top[mask], atol=1e-5)


def test_lexicon_attributes_fit_save_load(tiny_bert: Path, tmp_path: Path) -> None:
    corpus = _corpus()
    corpus.append(corpus[1].model_copy(update={"id": "s5"}))  # "may" and "severe" seen twice
    with pytest.raises(ModelError, match="attributes"):
        TransformerExtractor(tiny_bert, attributes="both").fit(corpus)
    # the model's own attribute sources, without the scope layer (tested in test_pv_scope.py)
    model = TransformerExtractor(
        tiny_bert, freeze_layers=0, epochs=1, batch_size=4, threads=1, attribute_scope=False
    ).fit(corpus)
    assert model.attributes == "lexicon"
    assert model.attribute_lexicon_.lexicon_ == {"may": "Speculated", "severe": "Severity.High"}
    text = "lithium may cause severe tremor ."
    pred = model.predict([text])[0]
    assert pred  # the trigger fallback always gives the sentence an event
    # Every lexicon cue is attached to exactly one event, whatever the tags said.
    assert sorted((a.name, a.value, a.cue.offsets()) for e in pred for a in e.attributes) == [
        ("Severity", "High", [(18, 24)]),
        ("Speculated", True, [(8, 11)]),
    ]
    # Per attribute: Speculated from the lexicon, Negated and Severity from the cue tags.
    model.attributes = "model"
    tagged = model.predict([text])[0]
    model.attributes = "Speculated"
    mixed = model.predict([text])[0]
    assert [e.trigger.offsets() for e in mixed] == [e.trigger.offsets() for e in pred]
    assert sorted((a.name, a.cue.offsets()) for e in mixed for a in e.attributes if a.name == "Speculated") == [
        ("Speculated", [(8, 11)])
    ]
    assert [[a for a in e.attributes if a.name != "Speculated"] for e in mixed] == [
        [a for a in e.attributes if a.name != "Speculated"] for e in tagged
    ]
    model.attributes = "Speculated,Hedged"
    with pytest.raises(ModelError, match="comma-separated"):
        model.predict([text])
    model.attributes = "lexicon"
    out = tmp_path / "m"
    model.save(out)
    meta = json.loads((out / "model.json").read_text())
    assert meta["params"]["attributes"] == "lexicon"
    assert meta["attribute_lexicon"] == {"may": "Speculated", "severe": "Severity.High"}
    again = TransformerExtractor.load(out).predict([text])[0]
    # The reloaded (fp16-stored) model attaches the same cues to the same triggers.
    assert [(e.trigger.offsets(), e.attributes) for e in again] == [(e.trigger.offsets(), e.attributes) for e in pred]
    # A model saved before the parameter existed keeps its tagged attributes.
    del meta["params"]["attributes"], meta["attribute_lexicon"]
    (out / "model.json").write_text(json.dumps(meta))
    old = TransformerExtractor.load(out)
    assert old.attributes == "model" and not hasattr(old, "attribute_lexicon_")
    meta["params"]["attributes"] = "lexicon"
    meta["attribute_lexicon"] = {"may": "Hedged"}
    (out / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelError, match="attribute_lexicon"):
        TransformerExtractor.load(out)


def test_load_rejects_other_kinds(tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text('{"kind": "crf"}')
    with pytest.raises(ModelError, match="kind"):
        TransformerExtractor.load(tmp_path)
    with pytest.raises(ModelError, match="model.json"):
        TransformerExtractor.load(tmp_path / "missing")


def test_cli_train_and_extract_with_tiny_bert(tiny_bert: Path, tmp_path: Path, cli) -> None:
    """``clinex pv train --model transformer --encoder DIR`` then ``extract --model DIR``."""
    from clinex.pv.formats.phee_json import write_phee_json

    corpus = _corpus()
    data = tmp_path / "train.json"
    write_phee_json(corpus, data)
    out = tmp_path / "model"
    res = cli(
        "pv", "train", "--model", "transformer", "--encoder", str(tiny_bert),
        "--train", str(data), "--dev", str(data), "--out", str(out),
        "--param", "epochs=25", "--param", "batch_size=4", "--param", "lr=0.003",
        "--param", "head_lr=0.01", "--param", "warmup=0.0", "--param", "dropout=0.0",
        "--param", "patience=25", "--param", "freeze_layers=0", "--param", "threads=1",
    )  # fmt: skip
    assert res.code == 0, res.stderr
    assert "dev trigger.classification.f1: 1.0000" in res.stdout
    card = (out / "MODEL_CARD.md").read_text()
    assert "clinex pv train --model transformer" in card
    pred_path = tmp_path / "pred.json"
    res = cli("pv", "extract", "--model", str(out), "--input", str(data), "--output", str(pred_path))
    assert res.code == 0, res.stderr
    lines = [json.loads(x) for x in pred_path.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["s1", "s2", "s3", "s4"]
    ev = lines[1]["annotations"][0]["events"][0]
    assert ev["event_type"] == "Adverse_event"
    assert ev["Trigger"]["text"] == [["cause"]] and ev["Trigger"]["start"] == [[12]]


# --- QA (stop 7): parameters, dev-less training, file modes, encoder folders, duplicates


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("epochs", "abc", "epochs must be an integer; got 'abc'"),
        ("epochs", 2.5, "epochs must be an integer; got 2.5"),
        ("lr", "abc", "lr must be a number; got 'abc'"),
        ("max_minutes", "abc", "max_minutes must be a number or null; got 'abc'"),
        ("trigger_fallback", "x", "trigger_fallback must be a number or null"),
        ("device", "tpu", "device must be 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'; got 'tpu'"),
        ("fallback_gate", "sometimes", "fallback_gate must be one of drug, evidence, always"),
    ],
)
def test_bad_parameter_values_are_model_errors(tiny_bert: Path, key: str, value, message: str) -> None:
    with pytest.raises(ModelError, match=r"\[CLX006\] " + message.replace("(", r"\(").replace(".", r"\.")):
        TransformerExtractor(tiny_bert, **{key: value}).fit(_corpus())


def test_numeric_strings_are_coerced(tiny_bert: Path) -> None:
    m = TransformerExtractor(tiny_bert, epochs="3", lr="0.01", max_minutes=None)
    m._check_params()
    assert (m.epochs, m.lr, m.max_minutes) == (3, 0.01, None)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only build")
def test_cuda_device_on_cpu_build_is_a_model_error(tiny_bert: Path) -> None:
    with pytest.raises(ModelError, match="sees no CUDA GPU"):
        TransformerExtractor(tiny_bert, device="cuda").fit(_corpus())


def test_freeze_layers_beyond_the_encoder_and_empty_dev(tiny_bert: Path) -> None:
    with pytest.raises(ModelError, match="freeze_layers must be at most 2 .*got 99"):
        TransformerExtractor(tiny_bert, freeze_layers=99, threads=1).fit(_corpus())
    with pytest.raises(ModelError, match="no dev sentences"):
        TransformerExtractor(tiny_bert, threads=1).fit(_corpus(), [])


def test_training_without_dev_writes_card_and_usual_file_modes(tiny_bert: Path, tmp_path: Path) -> None:
    from clinex.io.modes import default_file_mode

    out = tmp_path / "nodev"
    train_transformer(_corpus(), None, out, encoder=str(tiny_bert), epochs=1, batch_size=4, threads=1, freeze_layers=0)
    card = (out / "MODEL_CARD.md").read_text()
    assert "- dev: none (no early stopping" in card
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {"heads.safetensors", "model.safetensors", "model.json"} <= {p.name for p in files}
    assert {p.stat().st_mode & 0o777 for p in files} == {default_file_mode()}


def test_encoder_folder_without_tokenizer_or_with_corrupt_weights(tiny_bert: Path, tmp_path: Path) -> None:
    import shutil

    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(tiny_bert / "config.json", bare / "config.json")
    shutil.copy(tiny_bert / "model.safetensors", bare / "model.safetensors")
    with pytest.raises(ModelError, match="no tokenizer files in the encoder folder"):
        TransformerExtractor(bare, threads=1).fit(_corpus())
    broken = tmp_path / "broken"
    shutil.copytree(tiny_bert, broken)
    data = (broken / "model.safetensors").read_bytes()
    (broken / "model.safetensors").write_bytes(data[:1000])
    with pytest.raises(ModelError, match="cannot load encoder weights: SafetensorError"):
        TransformerExtractor(broken, threads=1).fit(_corpus())


def test_decode_keeps_a_widened_span_once() -> None:
    text = "hepatotoxicity occurred"
    offsets = [(0, 6), (6, 14), (15, 23)]
    labels = LAYERS["trigger"]
    b = 1 + 3 * labels.index("Adverse_event")
    spans = decode_tags(text, offsets, [b, b, 0], labels)  # two B pieces of one word
    assert [(lab, sp.offsets()) for lab, sp, _ in spans] == [("Adverse_event", [(0, 14)])]


# --- QA round 2 (stop 7): long texts, saved-model damage, more parameter checks


@pytest.fixture(scope="module")
def tiny_model(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny_model") / "m"
    train_transformer(
        _corpus(), None, out, encoder=str(tiny_bert), epochs=1, batch_size=4, threads=1,
        freeze_layers=0, max_length=100000,
    )
    return out


def test_long_text_is_cut_into_windows_not_truncated(tiny_model: Path) -> None:
    model = TransformerExtractor.load(tiny_model)
    assert model.max_length == 100000 and model._max_tokens() == 64  # capped at the position table
    # 5 tokens per sentence, a 62-token window: cut at the sentence start at token 60 (12 sentences)
    text = "The patient was treated. " * 30 + "Heparin induced thrombocytopenia ."
    pieces = model._pieces(text)
    assert [off for off, _ in pieces] == [0, 12 * 25, 24 * 25]
    assert all(text[off : off + len(p)] == p for off, p in pieces)
    assert all(len(model.tokenizer_(p, add_special_tokens=False)["input_ids"]) <= 62 for _, p in pieces)
    assert pieces[1][1].startswith("The patient") and pieces[0][1].endswith("treated. ")
    # no sentence start inside the window (lower case): cut at the word start at token 62 ("was")
    lower = "the patient was treated . " * 30
    assert [off for off, _ in model._pieces(lower)][:2] == [0, 12 * 26 + len("the patient ")]
    (events,) = model.predict([text])  # no crash; every fragment indexes the whole text
    frags = [f for ev in events for sp in (ev.trigger, *(a.span for a in ev.arguments)) for f in sp.fragments]
    assert frags and all(text[f.start : f.end] == f.text for f in frags)
    assert max(f.end for f in frags) > 24 * 25  # the last window's events are there, shifted back


def test_damaged_model_folders_are_model_errors(tiny_model: Path, tmp_path: Path) -> None:
    import shutil

    def copy(name: str) -> Path:
        dst = tmp_path / name
        shutil.copytree(tiny_model, dst)
        return dst

    m = copy("trunc")
    (m / "heads.safetensors").write_bytes((m / "heads.safetensors").read_bytes()[:1000])
    with pytest.raises(ModelError, match=r"trunc/heads\.safetensors: cannot load the tag layers: SafetensorError"):
        TransformerExtractor.load(m)
    m = copy("noheads")
    (m / "heads.safetensors").unlink()
    with pytest.raises(ModelError, match="no heads.safetensors"):
        TransformerExtractor.load(m)
    m = copy("noenc")
    shutil.rmtree(m / "encoder")
    with pytest.raises(ModelError, match="noenc: the model folder has no encoder/ folder"):
        TransformerExtractor.load(m)
    m = copy("badparam")
    meta = json.loads((m / "model.json").read_text())
    meta["params"]["join_adjacent"] = "nope"
    (m / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelError, match=r"badparam/model\.json: field 'params': join_adjacent must be"):
        TransformerExtractor.load(m)
    for k, bad in enumerate([None, "abc", [1], {"epochs": 3}, "missing"]):
        m = copy(f"params{k}")
        meta = json.loads((m / "model.json").read_text())
        if bad == "missing":
            del meta["params"]
        else:
            meta["params"] = bad
        (m / "model.json").write_text(json.dumps(meta))
        with pytest.raises(ModelError, match=rf"params{k}/model\.json: field 'params': params must be an object"):
            TransformerExtractor.load(m)


def test_card_without_dev_has_no_dev_columns(tiny_model: Path) -> None:
    card = (tiny_model / "MODEL_CARD.md").read_text()
    # the "## Command" section repeats the command line (test file names such as
    # test_pv_provenance contain "nan"); check for NaN values everywhere else
    body = re.sub(r"## Command\n+ {4}[^\n]*\n", "", card)
    assert "| epoch | loss | minutes |" in card and "Dev scores" not in card and "nan" not in body.lower()
    assert "no dev split: the last epoch is kept" in card


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("threads", -3, "threads must be >= 1 or null; got -3"),
        ("max_length", 1, "max_length must be at least 16 sub-word tokens"),
        ("threads", 0, "threads must be >= 1 or null; got 0"),
        ("patience", -1, "patience must be >= 1; got -1"),
        ("max_minutes", 0, "max_minutes must be > 0 or null; got 0"),
        ("max_minutes", -1, "max_minutes must be > 0 or null; got -1"),
    ],
)
def test_more_bad_parameter_values(tiny_bert: Path, key: str, value, message: str) -> None:
    with pytest.raises(ModelError, match=message.replace(".", r"\.")):
        TransformerExtractor(tiny_bert, **{key: value}).fit(_corpus())


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="checks a build without MPS")
def test_mps_device_without_mps_is_a_model_error(tiny_bert: Path) -> None:
    with pytest.raises(ModelError, match="no MPS support"):
        TransformerExtractor(tiny_bert, device="mps").fit(_corpus())


def test_no_training_step_is_an_error(tiny_bert: Path) -> None:
    with pytest.raises(ModelError, match="training stopped before its first step"):
        TransformerExtractor(tiny_bert, max_minutes=1e-9, threads=1, freeze_layers=0).fit(_corpus())
