"""The OpenAI chat request as clients send it (``graphstrata/bindings/server/chat_request.py``)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from graphstrata.bindings.server.chat_request import (
    ChatRequest,
    conversation,
    cut_at_stop,
    refuse_unsupported,
)
from graphstrata.bindings.server.errors import ApiError


def request(**members) -> ChatRequest:
    return ChatRequest.model_validate(
        {"model": "ix", "messages": [{"role": "user", "content": "q"}], **members}
    )


def test_unknown_members_and_every_role_are_accepted():
    body = ChatRequest.model_validate(
        {
            "model": "ix",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Who?"}, {"type": "image_url"}],
                },
                {"role": "assistant", "content": None, "tool_calls": [{"id": "t"}]},
                {"role": "tool", "content": "42", "tool_call_id": "t"},
                {"role": "user", "content": "And then?"},
            ],
            "a_member_from_next_year": True,
        }
    )
    question, history = conversation(body.messages, 100)
    assert question == "And then?"
    assert history == [("user", "Who?")]  # no system, tool or text-less turns


def test_the_last_user_message_needs_text_and_is_cut_to_the_limit():
    body = request(messages=[{"role": "user", "content": [{"type": "image_url"}]}])
    with pytest.raises(ApiError) as err:
        conversation(body.messages, 100)
    assert err.value.status == 400 and err.value.details["param"] == "messages.0.content"
    assert conversation(request().messages, 100)[0] == "q"
    assert (
        conversation(request(messages=[{"role": "user", "content": "abcdef"}]).messages, 3)[0]
        == "abc"
    )


@pytest.mark.parametrize(
    ("members", "param"),
    [
        ({"n": 2}, "n"),
        ({"tools": [{"type": "function"}], "tool_choice": "required"}, "tool_choice"),
        ({"functions": [{"name": "f"}], "function_call": {"name": "f"}}, "function_call"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"logprobs": True}, "logprobs"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"audio": {"voice": "alloy", "format": "mp3"}}, "modalities"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ],
)
def test_what_cannot_be_honoured_is_refused(members, param):
    with pytest.raises(ApiError) as err:
        refuse_unsupported(request(**members))
    assert err.value.status == 400 and err.value.details["param"] == param


def test_neutral_values_pass_and_the_limits_hold():
    body = request(n=1, tool_choice="required", logprobs=False, top_logprobs=0, max_tokens=99999)
    refuse_unsupported(body)  # tool_choice "required" without tools asks for nothing
    assert body.completion_limit() == 4096
    assert request(max_tokens=5.0).completion_limit() == 5
    with pytest.raises(ValidationError):
        request(seed=True)
    with pytest.raises(ValidationError):
        request(temperature=2.5)


def test_stop_cuts_at_the_first_sequence():
    assert cut_at_stop("a [1] b [2]", ["[2]", "[1]"]) == "a "
    assert cut_at_stop("abc", ["x", ""]) == "abc"
