"""Request bodies validated by one serializer instance per class (common.api_input): the same data and errors as is_valid."""

from __future__ import annotations

import threading
from unittest import mock

import pytest
from rest_framework import serializers
from rest_framework.fields import Field

from annotation.api import JudgmentSubmitApi
from common.api_input import validated

Input = JudgmentSubmitApi.JudgmentInput
GOOD = {
    "idempotency_key": "k1", "alignment": "A", "alignment_confidence": "3.5", "musicality": "B", "musicality_confidence": 4,
    "listening_log": {"A": {"plays": 1, "seconds": 3.0}, "B": {"seconds": 2.5}, "switches": 2},
}
BAD = [
    {},
    {**GOOD, "alignment": "C"},
    {**GOOD, "alignment_confidence": "9"},
    {**GOOD, "listening_log": {"A": {"seconds": -1}, "B": {"seconds": "x"}}},
    {**GOOD, "time_on_page_ms": 2**40},
    {**GOOD, "rationale": "x" * 5001},
    [],
    None,
    "text",
]


def _reference(data):
    serializer = Input(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except serializers.ValidationError as exc:
        return "error", exc.detail
    return "ok", serializer.validated_data


def _ours(data):
    try:
        return "ok", validated(Input, data)
    except serializers.ValidationError as exc:
        return "error", exc.detail


@pytest.mark.parametrize("data", [GOOD, {**GOOD, "rationale": "  kept  ", "time_on_page_ms": 1200}, *BAD])
def test_the_same_validated_data_or_the_same_errors_as_a_fresh_serializer(data):
    assert _ours(data) == _reference(data)


def test_fields_are_not_copied_per_request():
    validated(Input, GOOD)  # the class's instance exists from here on
    with mock.patch.object(Field, "__deepcopy__", side_effect=AssertionError("a field was copied")):
        for _ in range(3):
            validated(Input, GOOD)
            with pytest.raises(serializers.ValidationError):
                validated(Input, BAD[1])


@pytest.mark.engine
def test_threads_validating_at_once_each_get_their_own_answer():
    results, errors = {}, []

    def work(n: int) -> None:
        try:
            for _ in range(200):
                data = {**GOOD, "idempotency_key": f"k{n}", "alignment": "AB"[n % 2]}
                out = validated(Input, data)
                assert out["idempotency_key"] == f"k{n}" and out["alignment"] == "AB"[n % 2]
            results[n] = True
        except Exception as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 8
