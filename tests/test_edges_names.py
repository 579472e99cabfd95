"""Parser errors that name the measure and the mistake (issue 37): a bad value names
the measure it belongs to, a comma-joined list of names is told to be a list, an
unknown name gives its close matches and where every name is listed."""

from __future__ import annotations

import pytest

import polars_rankeval as pr


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ndcg@1O", r"Cannot read the cutoff '1O' of nDCG in 'ndcg@1O'"),
        ("P@five", r"The cutoff of P must be int. Got 'five' instead"),
        ("IPrec@0.5x", r"Cannot read the cutoff '0.5x' of IPrec in 'IPrec@0.5x'"),
        ("P(rel=2 3)@5", r"Cannot read parameter rel of P in 'P\(rel=2 3\)@5'"),
        ("AP(rel=)", r"Cannot read parameter rel of AP in 'AP\(rel=\)'"),
        ("P.5,x", r"Cannot read the value 'x' of P in 'P.5,x'"),
        ("Rprec_mult.0.2,y", r"Cannot read the value 'y' of Rprec in 'Rprec_mult.0.2,y'"),
    ],
)
def test_a_bad_value_names_its_measure(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pr.parse_measures(name)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("P@10,AP", ["P@10", "AP"]),
        ("AP, nDCG@10", ["AP", "nDCG@10"]),
        ("map,ndcg_cut_10,P(rel=2)@5", ["map", "ndcg_cut_10", "P(rel=2)@5"]),
    ],
)
def test_names_joined_by_commas_are_told_to_be_a_list(text: str, names: list[str]) -> None:
    want = rf"{text!r} looks like {len(names)} measure names: pass a list, measures={names!r}"
    for parse in (pr.parse, pr.parse_measures):
        with pytest.raises(ValueError, match=want.replace("(", r"\(").replace(")", r"\)")
                           .replace("[", r"\[").replace("]", r"\]")):  # fmt: skip
            parse(text)
    assert [str(m) for m in pr.parse_measures(names)] == [str(pr.parse(n)) for n in names]


def test_commas_that_belong_to_a_name_still_parse() -> None:
    assert [str(m) for m in pr.parse_measures("P.5,10")] == ["P@5", "P@10"]
    assert str(pr.parse("P(rel=2,judged_only=True)@5")) == "P(judged_only=True,rel=2)@5"


@pytest.mark.parametrize(
    ("name", "close"), [("mapp", "map"), ("ndgc@10", "ndcg"), ("Bperf", "Bpref")]
)
def test_unknown_names_give_close_matches_not_every_name(name: str, close: str) -> None:
    with pytest.raises(ValueError) as error:
        pr.parse(name)
    message = str(error.value)
    assert f"Unknown measure {name!r}. Did you mean: " in message
    assert close in message.split("Did you mean: ")[1]
    assert "pr.measures.REGISTRY" in message and "docs/measures.md" in message
    assert "Known measures" not in message and "AUROC" not in message
    assert len(message) < 250


def test_an_unknown_name_without_close_matches_still_says_where_names_are() -> None:
    with pytest.raises(ValueError, match=r"Unknown measure 'zzzzzz'\. Every measure: "):
        pr.parse("zzzzzz")
