"""CONSORT-TM article XML (Kilicoglu et al., J Biomed Inform 2021) as a trial report input."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinex.errors import FormatError
from clinex.io.consort_tm import looks_like_consort_tm, read_consort_tm
from clinex.rob.formats.load import load_document

TEXT = (
    "Title\nA randomised trial of X\nAbstract\nWe compared X with placebo in 40 adults.\n\n"
    "Introduction\nX may help.\n\n"
    "Methods\nParticipants were randomised by a computer-generated list.\n"
    "Allocation was concealed in sealed opaque envelopes.\n\n"
    "Results\nAll 40 randomised participants were analysed.\n"
)


def _article(tmp_path: Path, text: str = TEXT, sentences: str | None = None) -> Path:
    if sentences is None:
        start = text.index("Participants")
        end = text.index("list.") + len("list.")
        conc = text.index("Allocation")
        sentences = (
            f'<sentence charOffset="{start}-{end}" id="S5" selection="8a"/>'
            f'<sentence charOffset="{conc}-{conc + 52}" id="S6" selection="9"/>'
            '<sentence charOffset="0-5" id="S1" selection=""/>'
        )
    p = tmp_path / "PMC1.xml"
    p.write_text(
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        f'<document id="PMC123" note=""><text xml:space="preserve">{text}</text>{sentences}</document>',
        encoding="utf-8",
    )
    return p


def test_text_offsets_and_items_are_the_corpus_own(tmp_path: Path) -> None:
    p = _article(tmp_path)
    assert looks_like_consort_tm(p)
    doc = read_consort_tm(p)
    assert (doc.id, doc.text, doc.meta["format"]) == ("PMC123", TEXT, "consort-tm")
    (s1, e1, i1), (s2, e2, i2) = doc.meta["consort_items"]
    assert (doc.text[s1:e1], i1) == ("Participants were randomised by a computer-generated list.", ["8a"])
    assert (doc.text[s2:e2], i2) == ("Allocation was concealed in sealed opaque envelopes.", ["9"])


def test_rob_assess_reads_it_with_sections_and_sentences(tmp_path: Path) -> None:
    doc = load_document(_article(tmp_path))
    labels = [s.label for s in doc.sections]
    assert "methods" in labels and "results" in labels
    methods = next(s for s in doc.sections if s.label == "methods")
    assert "Participants were randomised by a computer-generated list." in [
        s.text for s in doc.sentences if methods.start <= s.start < methods.end
    ]


def test_jats_is_still_read_as_jats(tmp_path: Path) -> None:
    p = tmp_path / "a.xml"
    p.write_text("<article><front><article-meta><title-group><article-title>T</article-title>"
                 "</title-group></article-meta></front><body><p>Text.</p></body></article>", encoding="utf-8")
    assert not looks_like_consort_tm(p)
    assert load_document(p).meta["format"] != "consort-tm"


@pytest.mark.parametrize("sentences,message", [
    ('<sentence charOffset="5-2" id="S9" selection="9"/>',
     "sentence S9: charOffset '5-2' is not 'start-end' inside a text of"),
    ('<sentence charOffset="0-99999" id="S9" selection="9"/>',
     "sentence S9: charOffset '0-99999' is not 'start-end' inside a text of"),
    ('<sentence charOffset="' + "9" * 5000 + '-1" id="S9" selection="9"/>',
     "sentence S9: charOffset '" + "9" * 5000 + "-1' is not 'start-end' inside a text of"),
])
def test_bad_offsets_name_the_sentence(tmp_path: Path, sentences: str, message: str) -> None:
    p = _article(tmp_path, sentences=sentences)
    with pytest.raises(FormatError) as exc:
        read_consort_tm(p)
    assert str(exc.value).startswith(f"[CLX002] {p}: field 'charOffset': {message}")


def test_empty_text_is_refused(tmp_path: Path) -> None:
    p = _article(tmp_path, text="  \n", sentences="")
    with pytest.raises(FormatError, match=r"field 'text': empty <text>: no article text to read"):
        read_consort_tm(p)


def test_real_corpus_articles_all_get_methods_and_results(shared_data: Path) -> None:
    files = sorted((shared_data / "consort_tm" / "xml").glob("*.xml"))
    assert len(files) == 38
    found = [{s.label for s in load_document(f).sections} for f in files]
    assert sum("methods" in x for x in found) == 38 and sum("results" in x for x in found) == 38
