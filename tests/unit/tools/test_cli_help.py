"""``arena-verl --help`` names every ``--judge`` form, as the grammar (``arena_verl.judge.spec``) defines them."""

from arena_verl.judge.spec import JUDGE_SPEC_FORMS
from arena_verl.tools.cli import build_parser


def test_the_help_names_every_judge_form():
    text = build_parser().format_help()
    assert "python:MODULE:FUNCTION" in JUDGE_SPEC_FORMS
    assert [form for form in JUDGE_SPEC_FORMS if form not in text] == []
