"""The coin-flip toy policy (arena_verl.testing.toy): whatever it is asked, every token is "Answer: 1" or "Answer: 2"
with probability about 1/2 each, so its groups on the coin-flip questions are mixed (DAPO keeps them) or uniform by
chance, and the verifier reads a response's last line as its answer."""

import pandas as pd
import pytest
import torch

from arena_verl.testing.toy import COIN_FLIP_ANSWERS, build_coin_flip_model, make_coin_flip_data
from arena_verl.verify.extraction import extract_final_answer


@pytest.fixture(scope="module")
def coin(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_coin_flip_model(tmp_path_factory.mktemp("coin"))
    return AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path)


def test_every_context_gets_the_same_fair_coin_over_the_two_answers(coin):
    tokenizer, model = coin
    answers = tokenizer.convert_tokens_to_ids([f"Answer: {a}\n" for a in COIN_FLIP_ANSWERS])
    for text in ("Question 0: is the answer 1 or 2?", "something else entirely, much longer than that"):
        ids = tokenizer(text, return_tensors="pt").input_ids
        with torch.no_grad():
            probs = model(ids).logits[0, -1].softmax(-1)
        assert probs[answers].sum() > 0.99
        assert probs[answers[0]] == pytest.approx(probs[answers[1]].item(), rel=1e-5)  # a fair coin


def test_a_sampled_response_has_one_of_the_two_answers(coin):
    tokenizer, model = coin
    ids = tokenizer("Question 3: is the answer 1 or 2?", return_tensors="pt").input_ids
    torch.manual_seed(0)
    out = model.generate(ids, do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=8,
                         num_return_sequences=16, pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    answers = [extract_final_answer(tokenizer.decode(o[ids.shape[1] :], skip_special_tokens=True)) for o in out]
    assert all(status == "ok" and answer in COIN_FLIP_ANSWERS for answer, status in answers)
    assert {answer for answer, _ in answers} == set(COIN_FLIP_ANSWERS)  # 16 fair flips: both sides (p = 1 - 2^-15)


def test_coin_flip_questions_alternate_their_answers(tmp_path):
    make_coin_flip_data(tmp_path / "q.parquet", rows=4, split="test")
    frame = pd.read_parquet(tmp_path / "q.parquet")
    assert [rm["ground_truth"] for rm in frame["reward_model"]] == ["1", "2", "1", "2"]
    assert {info["split"] for info in frame["extra_info"]} == {"test"}
    with pytest.raises(ValueError, match="rows must be >= 1"):
        make_coin_flip_data(tmp_path / "none.parquet", rows=0, split="train")
