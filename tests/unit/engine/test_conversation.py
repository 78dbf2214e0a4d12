"""The search query of a conversation (``graphstrata/engine/conversation.py``)."""

from __future__ import annotations

from graphstrata.engine.conversation import content_words, conversation_query, salient_terms


def test_salient_terms_are_names_acronyms_and_numbers_not_sentence_openers():
    text = "What is the Sundra Aerosol Lidar (SAL)? It was built in 2007 by Meridian Optics."
    assert salient_terms(text) == [
        "Sundra",
        "Aerosol",
        "Lidar",
        "SAL",
        "2007",
        "Meridian",
        "Optics",
    ]
    assert salient_terms("Who founded it? When did he retire?") == []


def test_content_words_drop_stop_words_and_repeats():
    assert content_words("How severe was the drought of 2014? The drought!") == [
        "severe",
        "drought",
        "2014",
    ]


def test_a_follow_up_that_names_nothing_gets_the_earlier_user_turns_words():
    history = [
        ("user", "Who founded Meridian Optics?"),
        ("assistant", "Meridian Optics was founded in 1971 by Tomas Veld [1]."),
    ]
    query = conversation_query("Where did he work before that?", history)
    # The assistant's names (1971, Tomas Veld) are not read; the user's words are.
    assert query == "Where did he work before that? founded Meridian Optics"


def test_a_question_that_names_its_subject_gets_only_earlier_names():
    history = [("user", "How severe was the drought of 2014?")]
    query = conversation_query("Who launched the Brekkvik Starlight Festival?", history)
    assert query == "Who launched the Brekkvik Starlight Festival? 2014"


def test_newest_turn_first_no_repeats_and_the_length_limit_holds():
    history = [
        ("user", "Tell me about the Kjell Telescope."),
        ("user", "And the Kjell Wide-Field Camera?"),
    ]
    query = conversation_query("Who built it?", history)
    assert query == "Who built it? Kjell Wide-Field Camera Telescope"
    assert conversation_query("Who built it?", history, max_chars=25) == "Who built it? Kjell"
    assert conversation_query("Who built it?", [], max_chars=5) == "Who built it?"
