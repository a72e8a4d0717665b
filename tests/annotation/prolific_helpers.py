"""A study recruited through a link, with five Prolific participants of known quality, and the same study at a FakeProlific."""

from __future__ import annotations

from annotation import services
from annotation.crowd_models import ScreeningAttempt
from annotation.models import Pair
from tests.factories import JudgmentFactory, PairFactory, StudyFactory, UserFactory

TOKEN = "tok-" + "Zq8x3Lr5Vb7Nc2Mk9Pw4" * 2
PIDS = ["5f1e0c2a9b3d4e5f6a7b8c01", "5f1e0c2a9b3d4e5f6a7b8c02", "5f1e0c2a9b3d4e5f6a7b8c03", "5f1e0c2a9b3d4e5f6a7b8c04", "5f1e0c2a9b3d4e5f6a7b8c05"]
PROLIFIC_STUDY = "61000180997ce18e0cd801b3"


def crowd_study(fake, *, name: str) -> dict:
    """p1-p4 completed, p1-p3 passed the headphone check; gold accuracy 1.0, 1.0, 0.5, 0.0 and none (p5 judged no gold pair).
    Prolific has their five submissions awaiting review, and one more from a participant id this study never saw."""
    owner = UserFactory(username=f"owner-{name}", roles=["researcher"])
    study = StudyFactory(name=name, owner=owner)
    link = services.recruitment_link_create(study=study, completion_code="DONE1", cap=50, label="Prolific main")
    gold = PairFactory(study=study, kind=Pair.Kind.GOLD)
    gold.expected_alignment = gold.expected_musicality = gold.clip_a
    gold.save()
    right, wrong = gold.clip_a, gold.clip_b
    answers = [(right, right), (right, right), (right, wrong), (wrong, wrong)]
    people = {}
    for i, pid in enumerate(PIDS):
        participant, _ = services.recruitment_enter(token=link.token, params={"PROLIFIC_PID": pid, "STUDY_ID": "S1", "SESSION_ID": f"sess{i}"})
        people[pid] = participant
        if i < 4:
            services.recruitment_finish(participant=participant)
            alignment, musicality = answers[i]
            JudgmentFactory(pair=gold, annotator=participant.user, alignment_choice=alignment, musicality_choice=musicality)
        if i < 3:
            ScreeningAttempt.objects.create(study=study, annotator=participant.user, kind="huggins", seed=i, trials=6, pass_mark=5, correct=6, passed=True)
    statuses = dict.fromkeys(PIDS, "AWAITING REVIEW") | {"unknown-on-our-side-00001": "AWAITING REVIEW"}
    subs = fake.add_study(PROLIFIC_STUDY, statuses)
    return {"study": study, "owner": owner, "link": link, "people": people, "study_id": PROLIFIC_STUDY, "subs": subs}
