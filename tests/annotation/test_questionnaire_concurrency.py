"""The same answers sent several times at once (a double click, a retrying client) store one response."""

import threading

import pytest
from django.db import connection

from annotation import services
from annotation.questionnaire_models import QuestionnaireResponse
from tests.factories import AnnotatorFactory, StudyFactory

SENDS = 6


@pytest.mark.engine
@pytest.mark.django_db(transaction=True)
def test_answers_sent_at_once_store_one_response():
    study = StudyFactory()
    questionnaire, _ = services.questionnaire_save(study=study, phase="pre", questions=[{"id": "age", "kind": "number", "text": "Age", "min": 18, "max": 99, "required": True}])
    annotator = AnnotatorFactory()
    results: list[tuple[int, bool]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(SENDS, timeout=60)

    def send(age: int):
        try:
            start.wait()
            response, created = services.questionnaire_answer(questionnaire=questionnaire, annotator=annotator, answers={"age": age})
            with lock:
                results.append((response.pk, created))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(20 + i,)) for i in range(SENDS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    stored = QuestionnaireResponse.objects.get()
    assert len(results) == SENDS and {pk for pk, _ in results} == {stored.pk}
    assert sum(created for _, created in results) == 1
