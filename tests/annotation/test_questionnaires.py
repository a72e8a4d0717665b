"""Questionnaires before and after a study: definitions checked, versions kept, answers checked on the server,
the participant's steps, the CSV, the datasheet and the report's `q.<question>=<value>` filters."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation import services
from annotation.crowd_models import ExternalParticipant
from annotation.dataset import dataset_export
from annotation.questionnaire_models import Questionnaire, QuestionnaireResponse
from annotation.questionnaire_schema import EXAMPLE, definition_parse
from annotation.questionnaire_selectors import annotators_answering, answer_rows
from common.errors import ServiceError
from scoring.report import report_build, report_options_parse
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyAnnotatorFactory, StudyFactory, SystemFactory, UserFactory

pytestmark = pytest.mark.django_db

PRE = [
    {"id": "training", "kind": "single", "text": "Musical training", "choices": ["None", "Some", "A lot"], "required": True},
    {"id": "genres", "kind": "multiple", "text": "Styles you listen to", "choices": ["Pop", "Jazz", "Classical"], "max_choices": 2},
    {"id": "comfort", "kind": "likert", "text": "My headphones are comfortable", "scale": ["Disagree", "Neutral", "Agree"]},
    {"id": "age", "kind": "number", "text": "Age", "min": 18, "max": 99, "required": True},
    {"id": "model", "kind": "text", "text": "Headphones model", "max_length": 10},
]
GOOD = {"q_training": "Some", "q_genres": ["Pop", "Jazz"], "q_comfort": "3", "q_age": "31", "q_model": "HD 600"}


# --- Definitions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "questions, says",
    [
        ('[{"id": "age", "kind": "number", "text": "Age", "min": 90, "max": 18}]', "Question 1 (age): min must not be above max"),
        ('[{"id": "x", "kind": "slider", "text": "?"}]', "does not match any of the expected tags"),
        ('[{"id": "Bad Id", "kind": "text", "text": "?"}]', "use lower-case letters"),
        ('[{"id": "a", "kind": "single", "text": "?", "choices": ["x", "x"]}]', "choices must differ"),
        ('[{"id": "a", "kind": "text", "text": "?"}, {"id": "a", "kind": "text", "text": "!"}]', "used more than once: a"),
        ('[{"id": "a", "kind": "text", "text": "?", "colour": "red"}]', "colour: Extra inputs are not permitted"),
        ('[{"id": "a", "kind": "multiple", "text": "?", "choices": ["x", "y"], "min_choices": 3}]', "min_choices must be at most max_choices"),
        ("{not json", "Not valid JSON (line 1, column 2)"),
        ('{"id": "a"}', "a JSON list of questions"),
    ],
)
def test_a_bad_definition_is_refused_with_where_and_why(questions, says):
    with pytest.raises(ServiceError) as caught:
        definition_parse(questions)
    assert says in caught.value.message


def test_the_documented_example_is_a_valid_definition():
    assert [q["kind"] for q in definition_parse(EXAMPLE)] == ["single", "multiple", "likert", "number", "text"]


def test_the_editor_shows_a_bad_definition_as_a_form_error_and_stores_nothing(client):
    owner = UserFactory(roles=["researcher"])
    study = StudyFactory(owner=owner)
    client.force_login(owner)
    url = reverse("study-questionnaires", kwargs={"name": study.name})
    bad = client.post(url, {"pre": '[{"id": "age", "kind": "number", "text": "Age", "min": 90, "max": 18}]', "post": ""})
    assert bad.status_code == 400 and "min must not be above max" in bad.content.decode()
    assert not Questionnaire.objects.exists()
    good = client.post(url, {"pre": json.dumps(PRE), "post": ""})
    assert good.status_code == 302 and Questionnaire.objects.get().questions[0]["id"] == "training"
    # The study page links here; someone who may not change the study cannot post.
    assert url in client.get(reverse("study-manage", kwargs={"name": study.name})).content.decode()
    client.force_login(UserFactory(roles=["researcher"]))
    assert client.post(url, {"pre": "", "post": ""}).status_code == 403
    assert Questionnaire.objects.get().questions


def test_editing_an_answered_questionnaire_makes_a_new_version_and_old_answers_keep_theirs():
    study = StudyFactory()
    first, changed = services.questionnaire_save(study=study, phase="pre", questions=PRE)
    assert changed and first.version == 1
    # Unanswered: changed in place.
    reworded = [{**PRE[0], "text": "Years of musical training"}, *PRE[1:]]
    same, changed = services.questionnaire_save(study=study, phase="pre", questions=reworded)
    assert changed and same.pk == first.pk and same.version == 1
    assert services.questionnaire_save(study=study, phase="pre", questions=reworded) == (same, False)
    early = AnnotatorFactory()
    services.questionnaire_answer(questionnaire=same, annotator=early, answers={"training": "None", "age": 40})
    second, changed = services.questionnaire_save(study=study, phase="pre", questions=reworded[:1])
    assert changed and second.version == 2 and second.pk != first.pk
    late = AnnotatorFactory()
    services.questionnaire_answer(questionnaire=second, annotator=late, answers={"training": "A lot"})
    versions = {(r["annotator"], r["question_id"]): r["version"] for r in answer_rows(study=study)}
    assert versions[(early.annotator_profile.pseudonym, "age")] == 1 and versions[(late.annotator_profile.pseudonym, "training")] == 2
    assert (late.annotator_profile.pseudonym, "age") not in versions  # the second version never asked it
    # The old version's answers are read against the old questions.
    assert QuestionnaireResponse.objects.get(annotator=early).questionnaire.questions[3]["id"] == "age"
    # A form of the old version sent now is refused; emptying the questionnaire asks nothing.
    with pytest.raises(ServiceError, match="changed while you answered"):
        services.questionnaire_answer(questionnaire=first, annotator=AnnotatorFactory(), answers={"training": "None"})
    emptied, _ = services.questionnaire_save(study=study, phase="pre", questions="")
    assert emptied.version == 3 and emptied.questions == []


# --- The participant's steps ----------------------------------------------------------------------


@pytest.fixture
def asked(client):
    study = StudyFactory(annotator_target=1)
    PairFactory(study=study)
    services.questionnaire_save(study=study, phase="pre", questions=PRE)
    member = StudyAnnotatorFactory(study=study).annotator
    client.force_login(member)
    return study, member, reverse("questionnaire-pre", kwargs={"name": study.name})


def test_the_questions_before_the_study_stand_before_the_first_pair(client, asked):
    study, member, url = asked
    page = client.get(reverse("annotate", kwargs={"name": study.name}))
    assert page.status_code == 302 and page.url == url
    shown = client.get(url)
    assert shown.status_code == 200 and "A few questions before you start" in shown.content.decode()


@pytest.mark.parametrize(
    "change, field, says",
    [
        ({"q_training": ""}, "q_training", "This question needs an answer before you go on."),
        ({"q_age": ""}, "q_age", "This question needs an answer before you go on."),
        ({"q_age": "150"}, "q_age", "less than or equal to 99"),
        ({"q_age": "31.5"}, "q_age", "Enter a whole number."),
        ({"q_training": "Professional"}, "q_training", "Select a valid choice"),
        ({"q_genres": ["Pop", "Metal"]}, "q_genres", "Select a valid choice"),
        ({"q_genres": ["Pop", "Jazz", "Classical"]}, "q_genres", "Pick between 0 and 2 choices"),
        ({"q_comfort": "4"}, "q_comfort", "Select a valid choice"),
        ({"q_model": "x" * 11}, "q_model", "at most 10 characters"),
        ({"q_salary": "1000"}, "__all__", "does not have (salary)"),
    ],
)
def test_bad_answers_get_a_form_error_and_store_nothing(client, asked, change, field, says):
    study, member, url = asked
    response = client.post(url, {"version": 1, **GOOD, **change})
    assert response.status_code == 400
    assert any(says in e for e in response.context["form"].errors[field]), response.context["form"].errors
    assert says.split("(")[0] in response.content.decode().replace("&#x27;", "'")
    assert not QuestionnaireResponse.objects.exists()
    # Still in the way of the pairs.
    assert client.get(reverse("annotate", kwargs={"name": study.name})).url == url


def test_good_answers_are_stored_once_typed_and_the_pairs_follow(client, asked):
    study, member, url = asked
    first = client.post(url, {"version": 1, **GOOD})
    assert first.status_code == 302 and first.url == reverse("annotate", kwargs={"name": study.name})
    again = client.post(url, {"version": 1, **GOOD, "q_training": "None"})  # a double click, or a second try
    assert again.status_code == 302
    response = QuestionnaireResponse.objects.get()
    assert response.annotator == member and response.questionnaire.version == 1
    assert response.answers == {"training": "Some", "genres": ["Pop", "Jazz"], "comfort": 3, "age": 31, "model": "HD 600"}
    assert client.get(reverse("annotate", kwargs={"name": study.name})).status_code == 200


def test_the_service_checks_typed_answers_itself():
    study = StudyFactory()
    questionnaire, _ = services.questionnaire_save(study=study, phase="pre", questions=PRE)
    for answers, says in [
        ({"age": 31}, "needs an answer"),
        ({"training": "None", "age": 17}, "from 18 to 99"),
        ({"training": "None", "age": float("nan")}, "Enter a number"),
        ({"training": "Nope", "age": 30}, "not one of the choices"),
        ({"training": "None", "age": 30, "comfort": 9}, "one point of the scale"),
        ({"training": "None", "age": 30, "forged": "x"}, "does not have (forged)"),
    ]:
        with pytest.raises(ServiceError, match=says.replace("(", r"\(").replace(")", r"\)")):
            services.questionnaire_answer(questionnaire=questionnaire, annotator=AnnotatorFactory(), answers=answers)
    assert not QuestionnaireResponse.objects.exists()


def test_a_recruited_participant_answers_the_questions_after_the_study_before_the_code(client):
    study = StudyFactory(name="recruited-q", annotator_target=1)
    pair = PairFactory(study=study)
    services.questionnaire_save(study=study, phase="post", questions=[{"id": "comment", "kind": "text", "text": "Anything to tell us?", "required": True}])
    link = services.recruitment_link_create(study=study, completion_code="C0MPL3TE")
    enter = f"{reverse('recruitment-enter', kwargs={'token': link.token})}?PROLIFIC_PID=5f0c0ffee&STUDY_ID=s&SESSION_ID=t"
    client.get(enter)
    client.post(enter, {})
    participant = ExternalParticipant.objects.get()
    services.consent_give(user=participant.user)
    post_url = reverse("questionnaire-post", kwargs={"name": study.name})
    assert client.get(post_url).status_code == 409  # the pair is still to judge
    JudgmentFactory(pair=pair, annotator=participant.user)
    done = reverse("recruitment-done", kwargs={"name": study.name})
    assert client.get(done).url == post_url
    blank = client.post(post_url, {"version": 1, "q_comment": "  "})
    assert blank.status_code == 400 and "This question needs an answer before you go on." in blank.content.decode()
    participant.refresh_from_db()
    assert participant.completed_at is None
    answered = client.post(post_url, {"version": 1, "q_comment": "Clip B clipped."})
    assert answered.url == done
    assert b"C0MPL3TE" in client.get(done).content


# --- Out of the platform: CSV, datasheet, report filters ---------------------------------------------


@pytest.fixture
def voted():
    """Six annotators on four pairs: the three with a lot of training always prefer the first system's clip,
    the three without split 2 to 1 on every pair, so agreement differs by training."""
    owner = UserFactory(roles=["researcher"])
    study = StudyFactory(owner=owner, overlap_target=6)
    questionnaire, _ = services.questionnaire_save(study=study, phase="pre", questions=PRE)
    good, other = SystemFactory(name="good-system"), SystemFactory(name="other-system")
    pairs = [PairFactory(study=study, condition=ConditionFactory(), clip_a=ClipFactory(system=good), clip_b=ClipFactory(system=other), overlap=6) for _ in range(4)]
    people = {"A lot": [AnnotatorFactory() for _ in range(3)], "None": [AnnotatorFactory() for _ in range(3)]}
    for training, group in people.items():
        for index, annotator in enumerate(group):
            StudyAnnotatorFactory(study=study, annotator=annotator)
            services.questionnaire_answer(questionnaire=questionnaire, annotator=annotator, answers={"training": training, "age": 20 + 10 * index, "comfort": 1 + index})
            for pair in pairs:
                choice = pair.clip_a if training == "A lot" or index < 2 else pair.clip_b
                JudgmentFactory(pair=pair, annotator=annotator, alignment_choice=choice, musicality_choice=choice)
    return study, owner, people


def test_the_answers_csv_has_one_row_per_annotator_and_question_for_the_owner_only(client, voted):
    study, owner, people = voted
    client.force_login(owner)
    url = reverse("study-questionnaire-answers", kwargs={"name": study.name})
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 6 * len(PRE)
    mine = {r["question_id"]: r for r in rows if r["annotator"] == people["None"][2].annotator_profile.pseudonym}
    assert mine["training"]["answer"] == "None" and mine["age"]["answer"] == "40" and mine["comfort"]["answer_label"] == "3 (Agree)"
    assert mine["model"]["answer"] == "" and {r["version"] for r in rows} == {"1"}
    assert url in client.get(reverse("study-questionnaires", kwargs={"name": study.name})).content.decode()
    client.force_login(UserFactory(roles=["researcher"]))
    assert client.get(url).status_code == 403


def test_the_datasheet_counts_the_answers_of_the_exported_annotators(tmp_path, voted):
    study, owner, people = voted
    dataset_export(out_dir=tmp_path / "out", studies=[study])
    sheet = (tmp_path / "out" / "README.md").read_text()
    section = sheet[sheet.index("## Questionnaires") : sheet.index("## Licence")]
    assert "| pre | 1 | `training` Musical training | 6 of 6 | None: 3, Some: 0, A lot: 3 |" in section
    assert "`age` Age | 6 of 6 | median 30 (from 20 to 40)" in section
    assert "1 (Disagree): 2, 2 (Neutral): 2, 3 (Agree): 2" in section
    assert "free text, not in this export" in section


def test_the_report_restricts_agreement_and_results_to_who_answered_so(voted):
    study, owner, people = voted
    everyone = report_build(study=study, options=report_options_parse({"bootstrap": "50"}), use_cache=False)
    trained = report_build(study=study, options=report_options_parse({"bootstrap": "50", "q.training": "A lot"}), use_cache=False)
    untrained = report_build(study=study, options=report_options_parse({"bootstrap": "50", "q.training": "None"}), use_cache=False)
    assert everyone["study"]["answer_filter"] is None and everyone["study"]["annotators"] == 6
    assert trained["study"]["annotators"] == 3 and trained["study"]["votes"] == 12
    assert trained["study"]["answer_filter"] == {"answers": {"training": ["A lot"]}, "annotators": 3}
    # Three agreeing annotators: every vote pair agrees. Two against one on each pair: one vote pair in three.
    assert trained["agreement"]["alignment"]["agreement_rate"] == 1.0
    assert untrained["agreement"]["alignment"]["agreement_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert untrained["agreement"]["alignment"]["agreement_rate"] < everyone["agreement"]["alignment"]["agreement_rate"] < 1.0
    won = {r["system_a"]: r for r in trained["systems"]["dimensions"]["alignment"]["pairs"]}
    assert sum(r["votes"] for r in trained["systems"]["dimensions"]["alignment"]["pairs"]) == 12
    assert sum(r["votes"] for r in untrained["systems"]["dimensions"]["alignment"]["pairs"]) == 12
    assert won  # the trained listeners' result is over their 12 votes only
    # Likert by position or label, numbers by value or range; several values of one question: any of them.
    assert annotators_answering(study=study, filters=(("comfort", ("Agree",)),)) == {people["A lot"][2].pk, people["None"][2].pk}
    assert annotators_answering(study=study, filters=(("age", ("25..40",)), ("training", ("None",)))) == {people["None"][1].pk, people["None"][2].pk}
    assert len(annotators_answering(study=study, filters=(("training", ("None", "A lot")),))) == 6


@pytest.mark.parametrize(
    "query, says",
    [
        ({"q.salary": "high"}, "no question “salary”"),
        ({"q.training": "Professional"}, "not an answer this question offers"),
        ({"q.model": "HD 600"}, "free-text answers cannot filter"),
        ({"q.age": "old"}, "give a number"),
    ],
)
def test_a_bad_report_filter_is_a_clear_400(client, voted, query, says):
    study, owner, people = voted
    client.force_login(owner)
    page = client.get(reverse("scoring:study-report", kwargs={"name": study.name}), query)
    assert page.status_code == 400 and says in page.content.decode()


def test_the_report_page_says_whom_it_is_restricted_to(client, voted):
    study, owner, people = voted
    client.force_login(owner)
    page = client.get(reverse("scoring:study-report", kwargs={"name": study.name}), {"q.training": "A lot", "bootstrap": "20"})
    assert page.status_code == 200
    notice = page.content.decode()
    notice = notice[notice.index('id="answer-filter-notice"') :][:600]
    assert "3 annotators" in notice and "<code>training</code> = A lot" in notice
    # The editor's counts link to the report filtered by each answer.
    editor = client.get(reverse("study-questionnaires", kwargs={"name": study.name})).content.decode()
    assert f"{reverse('scoring:study-report', kwargs={'name': study.name})}?q.training=A%20lot" in editor


def test_an_annotator_who_withdrew_leaves_the_answers_csv_and_the_counts(client, voted):
    study, owner, people = voted
    services.consent_withdraw(user=people["None"][0])
    client.force_login(owner)
    rows = list(csv.DictReader(io.StringIO(client.get(reverse("study-questionnaire-answers", kwargs={"name": study.name})).content.decode())))
    assert len(rows) == 5 * len(PRE) and people["None"][0].annotator_profile.pseudonym not in {r["annotator"] for r in rows}
    editor = client.get(reverse("study-questionnaires", kwargs={"name": study.name}))
    training = next(s for s in editor.context["summary"] if s["question"]["id"] == "training")
    assert training["counts"] == [("None", 2), ("Some", 0), ("A lot", 3)]
