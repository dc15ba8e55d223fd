"""The leaderboard's empty states say their true reason (#19 item 16), each reached by building its state."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import make_generation, make_judge, make_judgment, make_procedure

pytestmark = pytest.mark.django_db


def empty_text(client: Client, query: str = "") -> str:
    html = client.get(reverse("judging:leaderboard") + query).content.decode()
    assert 'class="empty"' in html
    return html


def test_it_says_what_is_missing_before_the_first_judgment(admin_client: Client) -> None:
    assert "No reference procedure (L1) has been imported yet." in empty_text(admin_client)
    procedure = make_procedure()
    assert "no generator has answered them (no L2) yet." in empty_text(admin_client)
    make_generation(procedure=procedure)
    assert "no judge exists yet to judge them." in empty_text(admin_client)
    judge = make_judge()
    assert "no generation has been judged yet." in empty_text(admin_client)
    assert "This judge has no judgment yet" in empty_text(admin_client, f"?judge={judge.judge_id}")


def test_it_names_an_unknown_judge(admin_client: Client) -> None:
    make_judgment()
    assert "No judge has the judge_id nosuchjudge." in empty_text(admin_client, "?judge=nosuchjudge")
