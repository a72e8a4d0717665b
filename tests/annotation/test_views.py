"""HTML views of the annotation app: consent, withdrawal, the annotate page and the researcher pages."""

from __future__ import annotations

import json
from datetime import timedelta

from django.contrib.auth.models import Group
from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from annotation import services
from annotation.models import AnnotatorProfile, Assignment, Study, StudyAnnotator
from tests.factories import (
    AnnotatorFactory,
    AssignmentFactory,
    JudgmentFactory,
    PairFactory,
    StudyAnnotatorFactory,
    StudyFactory,
    UserFactory,
)


def new_annotator(username: str):
    """An annotator account that has not given consent yet."""
    return UserFactory(username=username, roles=["annotator"])


class HomeTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="home-study", title="Home study", annotator_target=4)
        cls.closed = StudyFactory(name="closed-study", is_active=False)
        cls.user = AnnotatorFactory(username="home-user")
        StudyAnnotatorFactory(study=cls.study, annotator=cls.user)
        StudyAnnotatorFactory(study=cls.closed, annotator=cls.user)
        pair = PairFactory(study=cls.study)
        JudgmentFactory(annotator=cls.user, pair=pair)
        # Pairs still open, so the study's target of 4 is reachable.
        for _ in range(3):
            PairFactory(study=cls.study)

    def test_anonymous_is_sent_to_login(self):
        response = self.client.get(reverse("home"))
        self.assertEqual(response.status_code, 302)
        self.assertTrue(response["Location"].startswith(reverse("login")))

    def test_lists_open_studies_with_progress_and_continue_link(self):
        self.client.force_login(self.user)
        response = self.client.get(reverse("home"))
        self.assertContains(response, "Home study")
        self.assertContains(response, "1 of 4 pairs judged")
        self.assertContains(response, reverse("annotate", args=["home-study"]))
        self.assertContains(response, "Continue")
        self.assertNotContains(response, "closed-study")

    def test_without_consent_the_way_in_is_the_consent_page(self):
        user = new_annotator("home-unconsented")
        services.study_annotator_add(study=self.study, user=user)
        self.client.force_login(user)
        response = self.client.get(reverse("home"))
        self.assertContains(response, reverse("consent"))
        self.assertContains(response, "Consent needed")
        self.assertNotContains(response, reverse("annotate", args=["home-study"]))


class ConsentTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="consent-study", licence="CC BY 4.0")
        cls.user = new_annotator("consent-user")
        services.study_annotator_add(study=cls.study, user=cls.user)

    def setUp(self):
        self.client.force_login(self.user)

    def test_page_says_what_is_collected_and_the_licence(self):
        response = self.client.get(reverse("consent"))
        self.assertContains(response, "What is collected")
        self.assertContains(response, "CC BY 4.0")
        self.assertContains(response, reverse("consent-withdraw"))
        self.assertContains(response, self.user.annotator_profile.pseudonym)

    def test_unticked_box_changes_nothing(self):
        response = self.client.post(reverse("consent"), {})
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "Tick the box to agree")
        self.assertIsNone(AnnotatorProfile.objects.get(user=self.user).consented_at)

    def test_agreeing_stores_consent_and_returns_to_next(self):
        target = reverse("annotate", args=["consent-study"])
        response = self.client.post(reverse("consent"), {"agree": "on", "next": target})
        self.assertRedirects(response, target, fetch_redirect_response=False)
        profile = AnnotatorProfile.objects.get(user=self.user)
        self.assertTrue(profile.has_consented)
        self.assertEqual(profile.consent_version, services.CONSENT_VERSION)

    def test_foreign_next_is_ignored(self):
        response = self.client.post(reverse("consent"), {"agree": "on", "next": "https://elsewhere.example/steal"})
        self.assertRedirects(response, reverse("home"), fetch_redirect_response=False)

    def test_consent_page_needs_login(self):
        self.client.logout()
        self.assertEqual(self.client.get(reverse("consent")).status_code, 302)


class AnnotatePageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="annotate-study", title="Annotate study", instructions="Judge carefully.")
        cls.pair = PairFactory(study=cls.study)
        cls.member = AnnotatorFactory(username="annotate-member")
        StudyAnnotatorFactory(study=cls.study, annotator=cls.member)
        cls.outsider = AnnotatorFactory(username="annotate-outsider")

    def url(self):
        return reverse("annotate", args=[self.study.name])

    def test_consent_is_required_before_annotating(self):
        user = new_annotator("annotate-no-consent")
        services.study_annotator_add(study=self.study, user=user)
        self.client.force_login(user)
        response = self.client.get(self.url())
        self.assertEqual(response.status_code, 302)
        self.assertEqual(response["Location"], f"{reverse('consent')}?next={self.url()}")

    def test_non_member_gets_403(self):
        self.client.force_login(self.outsider)
        response = self.client.get(self.url())
        self.assertEqual(response.status_code, 403)
        self.assertContains(response, "not an annotator of this study", status_code=403)

    def test_unknown_study_is_404(self):
        self.client.force_login(self.member)
        self.assertEqual(self.client.get(reverse("annotate", args=["no-such-study"])).status_code, 404)

    def test_member_gets_the_page_with_api_urls_and_shortcuts(self):
        self.client.force_login(self.member)
        response = self.client.get(self.url())
        self.assertEqual(response.status_code, 200)
        config = response.context["config"]
        self.assertEqual(config["nextUrl"], reverse("api-assignment-next", kwargs={"name": self.study.name}))
        self.assertEqual(config["judgmentUrl"].replace("{id}", "7"), reverse("api-judgment-submit", kwargs={"assignment_id": 7}))
        self.assertEqual(config["skipUrl"].replace("{id}", "7"), reverse("api-assignment-skip", kwargs={"assignment_id": 7}))
        html = response.content.decode()
        self.assertIn('id="listen-config"', html)
        start = html.index('id="listen-config"')
        payload = html[html.index(">", start) + 1 : html.index("</script>", start)]
        self.assertEqual(json.loads(payload)["study"], self.study.name)
        for key in ("Space", "Shift", "Esc"):
            self.assertIn(f"<kbd>{key}</kbd>", html)
        # Nine confidence steps per question: 1, 1.5, ... 5.
        self.assertEqual(html.count('name="alignment_confidence"'), 9)
        self.assertIn('value="4.5"', html)

    def test_page_never_names_systems_or_files(self):
        self.client.force_login(self.member)
        html = self.client.get(self.url()).content.decode()
        for clip in (self.pair.clip_a, self.pair.clip_b):
            self.assertNotIn(clip.system.name, html)
            self.assertNotIn(clip.sha256, html)
            self.assertNotIn(str(clip.public_id), html)


class WithdrawTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.study = StudyFactory(name="withdraw-study")
        cls.user = AnnotatorFactory(username="withdrawer")
        StudyAnnotatorFactory(study=cls.study, annotator=cls.user)
        pairs = [PairFactory(study=cls.study) for _ in range(3)]
        JudgmentFactory(annotator=cls.user, pair=pairs[0])
        JudgmentFactory(annotator=cls.user, pair=pairs[1])
        cls.live = AssignmentFactory(annotator=cls.user, pair=pairs[2])

    def setUp(self):
        self.client.force_login(self.user)

    def test_page_explains_the_consequence(self):
        response = self.client.get(reverse("consent-withdraw"))
        self.assertContains(response, "2 judgments")
        self.assertContains(response, "left out of every export and analysis")

    def test_consent_page_after_withdrawal_says_earlier_answers_count_again(self):
        services.consent_withdraw(user=self.user)
        self.assertContains(self.client.get(reverse("consent")), "answers you gave before")

    def test_without_confirmation_nothing_changes(self):
        response = self.client.post(reverse("consent-withdraw"), {})
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "nothing was changed")
        self.assertIsNone(AnnotatorProfile.objects.get(user=self.user).withdrawn_at)

    def test_withdrawal_excludes_judgments_and_releases_locks(self):
        response = self.client.post(reverse("consent-withdraw"), {"confirm": "on"}, follow=True)
        self.assertContains(response, "Your 2 judgments will be left out of every export and analysis")
        profile = AnnotatorProfile.objects.get(user=self.user)
        self.assertIsNotNone(profile.withdrawn_at)
        self.assertFalse(profile.has_consented)
        self.live.refresh_from_db()
        self.assertEqual(self.live.state, Assignment.State.EXPIRED)
        self.assertFalse(StudyAnnotator.objects.get(study=self.study, annotator=self.user).is_active)
        # The dataset export leaves the withdrawn annotator's judgments out.
        from annotation.dataset.exporter import _exportable_judgments

        kept, left_out = _exportable_judgments(self.study.pairs.all())
        self.assertEqual(kept.count(), 0)
        self.assertEqual(left_out["annotator withdrew consent"], 2)
        # No more pairs for them: the study is gone from their page and the annotate page is closed.
        self.assertEqual(self.client.get(reverse("annotate", args=[self.study.name])).status_code, 403)
        self.assertNotContains(self.client.get(reverse("home")), reverse("annotate", args=[self.study.name]))


MANAGE_PAGES = [
    ("study-manage-list", []),
    ("study-create", []),
    ("study-manage", ["roles-study"]),
    ("study-edit", ["roles-study"]),
]


class RoleTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="roles-researcher", roles=["researcher"])
        cls.study = StudyFactory(name="roles-study", owner=cls.researcher)
        cls.annotator = AnnotatorFactory(username="roles-annotator")
        cls.admin = UserFactory(username="roles-admin", roles=["admin"])

    def test_anonymous_is_sent_to_login(self):
        for name, args in MANAGE_PAGES:
            with self.subTest(page=name):
                response = self.client.get(reverse(name, args=args))
                self.assertEqual(response.status_code, 302)
                self.assertTrue(response["Location"].startswith(reverse("login")))

    def test_annotators_get_403_everywhere(self):
        self.client.force_login(self.annotator)
        for name, args in MANAGE_PAGES:
            with self.subTest(page=name):
                self.assertEqual(self.client.get(reverse(name, args=args)).status_code, 403)
        response = self.client.post(reverse("study-create"), {"name": "sneaky", "licence": "x", "overlap_target": 1})
        self.assertEqual(response.status_code, 403)
        self.assertFalse(Study.objects.filter(name="sneaky").exists())
        response = self.client.post(reverse("study-annotators-add", args=[self.study.name]), {"usernames": "roles-annotator"})
        self.assertEqual(response.status_code, 403)
        self.assertFalse(StudyAnnotator.objects.filter(study=self.study).exists())

    def test_researchers_and_admins_get_in(self):
        for user in (self.researcher, self.admin):
            self.client.force_login(user)
            for name, args in MANAGE_PAGES:
                with self.subTest(user=user.username, page=name):
                    self.assertEqual(self.client.get(reverse(name, args=args)).status_code, 200)

    def test_annotators_see_no_management_link(self):
        self.client.force_login(self.annotator)
        self.assertNotContains(self.client.get(reverse("home")), reverse("study-manage-list"))
        self.client.force_login(self.researcher)
        self.assertContains(self.client.get(reverse("home")), reverse("study-manage-list"))


VALID_STUDY = {
    "name": "new-study",
    "title": "New study",
    "instructions": "Listen to both clips.",
    "overlap_target": 3,
    "overlap_share": 0.25,
    "min_listen_seconds": 7.5,
    "rationale_min_length": 20,
    "lock_ttl_seconds": 900,
    "gold_rate": 0.05,
    "annotator_target": 40,
    "selection": "disagreement",
    "active_share": 0.4,
    "licence": "CC BY-NC-SA 4.0",
    "is_active": "on",
}


class StudyCreateEditTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="creator", roles=["researcher"])

    def setUp(self):
        self.client.force_login(self.researcher)

    def test_create_study_with_all_parameters(self):
        response = self.client.post(reverse("study-create"), VALID_STUDY)
        self.assertRedirects(response, reverse("study-manage", args=["new-study"]), fetch_redirect_response=False)
        study = Study.objects.get(name="new-study")
        self.assertEqual(
            (study.title, study.overlap_target, study.overlap_share, study.min_listen_seconds, study.rationale_min_length),
            ("New study", 3, 0.25, 7.5, 20),
        )
        self.assertEqual((study.lock_ttl_seconds, study.gold_rate, study.annotator_target, study.licence), (900, 0.05, 40, "CC BY-NC-SA 4.0"))
        self.assertEqual((study.selection, study.active_share), ("disagreement", 0.4))
        self.assertTrue(study.is_active)

    def test_bad_values_are_explained_and_nothing_is_created(self):
        cases = {
            "overlap_share": ({"overlap_share": 1.5}, "less than or equal to 1"),
            "lock_ttl_seconds": ({"lock_ttl_seconds": 5}, "greater than or equal to 10"),
            "licence": ({"licence": "  "}, "Name the licence"),
            "name": ({"name": "has spaces!"}, "letters, numbers, underscores or hyphens"),
            "min_listen_seconds": ({"min_listen_seconds": -1}, "greater than or equal to 0"),
        }
        for field, (override, message) in cases.items():
            with self.subTest(field=field):
                response = self.client.post(reverse("study-create"), {**VALID_STUDY, **override})
                self.assertEqual(response.status_code, 200)
                self.assertContains(response, message)
                self.assertContains(response, "nothing was saved")
        self.assertFalse(Study.objects.exists())

    def test_duplicate_name_is_refused(self):
        StudyFactory(name="new-study")
        response = self.client.post(reverse("study-create"), VALID_STUDY)
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "already exists")
        self.assertEqual(Study.objects.count(), 1)

    def test_edit_changes_parameters_but_not_the_name(self):
        study = StudyFactory(name="edit-me", min_listen_seconds=10, owner=self.researcher)
        response = self.client.post(reverse("study-edit", args=["edit-me"]), {**VALID_STUDY, "name": "renamed", "min_listen_seconds": 4})
        self.assertRedirects(response, reverse("study-manage", args=["edit-me"]), fetch_redirect_response=False)
        study.refresh_from_db()
        self.assertEqual(study.name, "edit-me")
        self.assertEqual(study.min_listen_seconds, 4)
        self.assertFalse(Study.objects.filter(name="renamed").exists())

    def test_edit_can_close_a_study(self):
        StudyFactory(name="to-close", owner=self.researcher)
        data = {k: v for k, v in VALID_STUDY.items() if k != "is_active"}
        self.client.post(reverse("study-edit", args=["to-close"]), data)
        self.assertFalse(Study.objects.get(name="to-close").is_active)


class AnnotatorAddTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="adder", roles=["researcher"])
        cls.study = StudyFactory(name="add-study", owner=cls.researcher)
        cls.alice = UserFactory(username="alice")
        cls.bob = UserFactory(username="bob")

    def setUp(self):
        self.client.force_login(self.researcher)
        self.url = reverse("study-annotators-add", args=[self.study.name])

    def test_adds_several_usernames_as_annotators(self):
        response = self.client.post(self.url, {"usernames": "alice, bob\nalice"})
        self.assertRedirects(response, reverse("study-manage", args=[self.study.name]), fetch_redirect_response=False)
        members = StudyAnnotator.objects.filter(study=self.study, is_active=True)
        self.assertEqual(sorted(m.annotator.username for m in members), ["alice", "bob"])
        annotator_group = Group.objects.get(name="annotator")
        self.assertTrue(annotator_group.user_set.filter(username="alice").exists())
        self.assertTrue(AnnotatorProfile.objects.filter(user=self.bob).exists())
        # The new annotators still have to consent themselves.
        self.assertFalse(AnnotatorProfile.objects.get(user=self.bob).has_consented)

    def test_unknown_username_adds_nobody(self):
        response = self.client.post(self.url, {"usernames": "alice nobody-here"})
        self.assertEqual(response.status_code, 400)
        self.assertContains(response, "No account named nobody-here; nobody was added", status_code=400)
        self.assertFalse(StudyAnnotator.objects.filter(study=self.study).exists())

    def test_empty_input_is_refused(self):
        response = self.client.post(self.url, {"usernames": " , "})
        self.assertEqual(response.status_code, 400)
        self.assertFalse(StudyAnnotator.objects.filter(study=self.study).exists())

    def test_adding_again_reactivates_a_membership(self):
        StudyAnnotator.objects.create(study=self.study, annotator=self.alice, seed=1, is_active=False)
        self.client.post(self.url, {"usernames": "alice"})
        self.assertTrue(StudyAnnotator.objects.get(study=self.study, annotator=self.alice).is_active)

    def test_get_is_not_allowed(self):
        self.assertEqual(self.client.get(self.url).status_code, 405)


class StudyProgressTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="watcher", roles=["researcher"])
        cls.study = StudyFactory(name="progress-study", annotator_target=5)
        cls.pairs = [PairFactory(study=cls.study, overlap=2) for _ in range(3)]
        cls.fast = AnnotatorFactory(username="fast")
        cls.slow = AnnotatorFactory(username="slow")
        for user in (cls.fast, cls.slow):
            StudyAnnotatorFactory(study=cls.study, annotator=user)
        JudgmentFactory(annotator=cls.fast, pair=cls.pairs[0], time_on_page_ms=4000)
        JudgmentFactory(annotator=cls.fast, pair=cls.pairs[1], time_on_page_ms=8000)
        JudgmentFactory(annotator=cls.fast, pair=cls.pairs[2], time_on_page_ms=30000)
        AssignmentFactory(annotator=cls.slow, pair=cls.pairs[0])  # live lock
        AssignmentFactory(annotator=cls.slow, pair=cls.pairs[1], state=Assignment.State.SKIPPED, skip_reason="broken audio")
        AssignmentFactory(
            annotator=cls.slow,
            pair=cls.pairs[2],
            served_at=timezone.now() - timedelta(hours=2),
            lock_expires_at=timezone.now() - timedelta(hours=1),
        )  # a lapsed lock is not live

    def setUp(self):
        # A collaborator: the study page follows the study rule (owner, collaborators, admins).
        self.study.collaborators.add(self.researcher)
        self.client.force_login(self.researcher)

    def test_per_annotator_progress(self):
        response = self.client.get(reverse("study-manage", args=[self.study.name]))
        rows = {row["username"]: row for row in response.context["annotators"]}
        self.assertEqual((rows["fast"]["done"], rows["fast"]["target"], rows["fast"]["skipped"]), (3, 5, 0))
        self.assertEqual(rows["fast"]["median_seconds"], 8.0)
        self.assertEqual((rows["slow"]["done"], rows["slow"]["skipped"], rows["slow"]["live"]), (0, 1, 1))
        self.assertIsNone(rows["slow"]["median_seconds"])
        self.assertContains(response, "3 / 5")

    def test_per_pair_votes_overlap_and_live_locks(self):
        response = self.client.get(reverse("study-manage", args=[self.study.name]))
        pairs = {p.pk: p for p in response.context["pairs"]}
        first, second, third = (pairs[p.pk] for p in self.pairs)
        self.assertEqual((first.votes, first.overlap, first.live, first.skips), (1, 2, 1, 0))
        self.assertEqual((second.votes, second.live, second.skips), (1, 0, 1))
        self.assertEqual((third.votes, third.live), (1, 0))
        totals = response.context["totals"]
        self.assertEqual(totals, {"pairs": 3, "votes_wanted": 6, "judgments": 3, "live_locks": 1, "skips": 1})

    def test_import_link_points_to_the_researchers_import_page_for_the_owner_only(self):
        url = f"{reverse('pairs-import')}?study={self.study.name}"
        response = self.client.get(reverse("study-manage", args=[self.study.name]))
        self.assertContains(response, url)  # collaborators import too
        self.study.collaborators.remove(self.researcher)
        self.assertEqual(self.client.get(reverse("study-manage", args=[self.study.name])).status_code, 403)  # neither owner nor collaborator
        self.study.owner = self.researcher
        self.study.save(update_fields=["owner"])
        response = self.client.get(reverse("study-manage", args=[self.study.name]))
        self.assertContains(response, f'href="{url}"')
        self.assertContains(response, f'href="{reverse("scoring:study-report", args=[self.study.name])}"')

    def test_study_list_counts(self):
        response = self.client.get(reverse("study-manage-list"))
        study = next(s for s in response.context["studies"] if s.name == self.study.name)
        self.assertEqual((study.n_pairs, study.n_annotators, study.n_judgments), (3, 2, 3))
