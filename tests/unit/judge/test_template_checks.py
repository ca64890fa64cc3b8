"""Judge templates that would break later are refused at start-up, naming their key: a pairwise key naming a
pointwise template (or any text without the pairwise placeholders), a pointwise key naming a pairwise one, a path
that does not exist (each key), a template of both kinds, one that is not UTF-8, one that never asks for a verdict
the parser reads; by the settings check and by every model-backed judge when it is built (before its model loads)."""

import pytest

from arena_verl.judge.backends.model_judge import ModelJudge
from arena_verl.judge.factory import make_judge
from arena_verl.judge.prompting.templates import check_judge_templates, load_template
from arena_verl.settings import JudgeSettings, judge_settings

BODY = "{problem}\n<{tag}>\n{first}\n</{tag}>\n<{tag}>\n{second}\n</{tag}>\n{reference_block}"


def judge(**keys) -> JudgeSettings:
    return judge_settings(backend="transformers", model_path="/no/such/model", **keys)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"pairwise_template": "pointwise"}, r"judge\.pairwise_template='pointwise' lacks \['\{first\}', '\{se"),
        ({"pointwise_template": "math"}, r"judge\.pointwise_template='math' lacks \['\{trace\}'\]"),
        ({"pointwise_template": "code"}, r"judge\.pointwise_template='code' lacks \['\{trace\}'\]"),
        ({"pairwise_template": "/no/such/pairwise.txt"}, r"judge\.pairwise_template: .*pairwise\.txt' cannot be read"),
        ({"pointwise_template": "/no/such/pointwise.txt"}, r"judge\.pointwise_template: .*cannot be read"),
        ({"pairwise_template": "/"}, r"judge\.pairwise_template: .*cannot be read"),  # a folder
    ],
)  # fmt: skip
def test_a_template_of_the_wrong_kind_or_missing_is_refused(keys, message):
    with pytest.raises(ValueError, match=message):
        check_judge_templates(judge(**keys))


def test_a_pairwise_key_naming_a_text_without_the_traces_is_refused(tmp_path):
    path = write(tmp_path, "no_traces.txt", "{problem} {tag}\nWhich is better? [[A]] or [[B]]")
    with pytest.raises(ValueError, match=r"judge\.pairwise_template: .*lacks the placeholders \['first', 'second'\]"):
        check_judge_templates(judge(pairwise_template=path))


def test_a_template_of_both_kinds_is_refused(tmp_path):
    path = write(tmp_path, "both.txt", BODY + "{trace}\n[[A]] [[B]] [[0]] [[1]]")
    for key in ("pairwise_template", "pointwise_template"):
        with pytest.raises(ValueError, match=rf"judge\.{key}: .*holds both \{{trace\}} .* one kind"):
            check_judge_templates(judge(**{key: path}))


def test_a_template_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(BODY.encode() + "\nR\xe9ponse : [[A]] ou [[B]]".encode("latin-1"))
    with pytest.raises(ValueError, match=r"judge\.pairwise_template: .*is not UTF-8 text"):
        check_judge_templates(judge(pairwise_template=str(path)))


def test_a_template_that_never_asks_for_the_verdict_tokens_is_refused(tmp_path):
    path = write(tmp_path, "prose.txt", BODY + "\nSay which response is better, A or B.")
    with pytest.raises(ValueError, match=r"never asks for \[\[A\]\], \[\[B\]\]"):
        check_judge_templates(judge(pairwise_template=path))
    path = write(tmp_path, "only_a.txt", BODY + "\nReply [[A]] if A is better.")
    with pytest.raises(ValueError, match=r"never asks for \[\[B\]\]"):
        check_judge_templates(judge(pairwise_template=path))
    path = write(tmp_path, "grade.txt", "{problem}\n<{tag}>\n{trace}\n</{tag}>\nGrade it from 1 to 10.")
    with pytest.raises(ValueError, match=r"pointwise_template=.* never asks for \[\[0\]\], \[\[1\]\]"):
        check_judge_templates(judge(pointwise_template=path))


def test_good_templates_pass_and_the_simulated_judge_reads_none(tmp_path):
    check_judge_templates(judge())  # the built-ins
    terse = write(tmp_path, "terse.txt", BODY + "\nReply with only [[A]] or [[B]].")  # no TIE: allowed
    check_judge_templates(judge(pairwise_template=terse))
    assert "[[A]]" in load_template(terse)
    check_judge_templates(judge_settings(backend="simulated", pairwise_template="/no/such/template.txt"))


def test_a_judge_refuses_them_when_it_is_built_before_its_model_loads():
    # /no/such/model would fail to load: the template error comes first
    with pytest.raises(ValueError, match=r"judge\.pointwise_template='math' lacks"):
        make_judge(judge(pointwise_template="math"))

    class Direct(ModelJudge):
        name = "direct"

    with pytest.raises(ValueError, match=r"judge\.pairwise_template='pointwise' lacks"):
        Direct(judge(pairwise_template="pointwise"))
