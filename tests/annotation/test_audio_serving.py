"""/audio/<uuid>/: HTTP Range serving (206, 416, ETag, 304) and who may hear a clip."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AnonymousUser
from django.test import TestCase
from django.urls import reverse

from common.blind import opaque_etag
from tests.factories import AssignmentFactory, ClipFactory, ConditionFactory, PairFactory, UserFactory


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


class RangeServingTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.researcher = UserFactory(username="range-researcher", roles=["admin"])  # admins hear every clip
        cls.clip = ClipFactory(duration=0.5)

    def setUp(self):
        self.client.force_login(self.researcher)
        self.url = reverse("clip-audio", kwargs={"public_id": self.clip.public_id})
        with self.clip.file.open("rb") as handle:
            self.data = handle.read()
        self.size = len(self.data)

    def test_whole_file_advertises_ranges_and_etag(self):
        response = self.client.get(self.url)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["Accept-Ranges"], "bytes")
        self.assertEqual(response["Content-Length"], str(self.size))
        # Opaque (common.blind): never the file's hash, which would name the clip wherever it is served.
        self.assertEqual(response["ETag"], f'"{opaque_etag(path=self.url, content_hash=self.clip.sha256)}"')
        self.assertNotIn(self.clip.sha256, response["ETag"])
        self.assertEqual(response["Content-Type"], "audio/wav")
        self.assertEqual(body(response), self.data)

    def test_byte_range_gives_206_with_exact_window(self):
        response = self.client.get(self.url, HTTP_RANGE="bytes=100-199")
        self.assertEqual(response.status_code, 206)
        self.assertEqual(response["Content-Range"], f"bytes 100-199/{self.size}")
        self.assertEqual(response["Content-Length"], "100")
        self.assertEqual(response["Accept-Ranges"], "bytes")
        self.assertEqual(body(response), self.data[100:200])

    def test_open_ended_range_runs_to_the_end(self):
        response = self.client.get(self.url, HTTP_RANGE="bytes=1000-")
        self.assertEqual(response.status_code, 206)
        self.assertEqual(response["Content-Range"], f"bytes 1000-{self.size - 1}/{self.size}")
        self.assertEqual(response["Content-Length"], str(self.size - 1000))
        self.assertEqual(body(response), self.data[1000:])

    def test_range_past_the_end_is_clamped(self):
        response = self.client.get(self.url, HTTP_RANGE=f"bytes={self.size - 10}-{self.size + 5000}")
        self.assertEqual(response.status_code, 206)
        self.assertEqual(response["Content-Range"], f"bytes {self.size - 10}-{self.size - 1}/{self.size}")
        self.assertEqual(body(response), self.data[-10:])

    def test_suffix_range_gives_the_last_bytes(self):
        response = self.client.get(self.url, HTTP_RANGE="bytes=-44")
        self.assertEqual(response.status_code, 206)
        self.assertEqual(response["Content-Range"], f"bytes {self.size - 44}-{self.size - 1}/{self.size}")
        self.assertEqual(response["Content-Length"], "44")
        self.assertEqual(body(response), self.data[-44:])

    def test_suffix_longer_than_file_gives_whole_file_as_206(self):
        response = self.client.get(self.url, HTTP_RANGE=f"bytes=-{self.size * 2}")
        self.assertEqual(response.status_code, 206)
        self.assertEqual(response["Content-Range"], f"bytes 0-{self.size - 1}/{self.size}")
        self.assertEqual(body(response), self.data)

    def test_unsatisfiable_range_is_416_with_size(self):
        response = self.client.get(self.url, HTTP_RANGE=f"bytes={self.size}-")
        self.assertEqual(response.status_code, 416)
        self.assertEqual(response["Content-Range"], f"bytes */{self.size}")

    def test_zero_suffix_is_unsatisfiable(self):
        response = self.client.get(self.url, HTTP_RANGE="bytes=-0")
        self.assertEqual(response.status_code, 416)

    def test_malformed_range_is_ignored_and_whole_file_sent(self):
        for header in ("bytes=abc", "items=0-10", "bytes=20-10", "bytes=0-1,5-9"):
            with self.subTest(header=header):
                response = self.client.get(self.url, HTTP_RANGE=header)
                self.assertEqual(response.status_code, 200)
                self.assertEqual(body(response), self.data)

    def test_matching_if_none_match_is_304_without_body(self):
        etag = f'"{opaque_etag(path=self.url, content_hash=self.clip.sha256)}"'
        response = self.client.get(self.url, HTTP_IF_NONE_MATCH=etag)
        self.assertEqual(response.status_code, 304)
        self.assertEqual(response["ETag"], etag)
        self.assertEqual(response.content, b"")

    def test_stale_if_none_match_serves_the_file(self):
        response = self.client.get(self.url, HTTP_IF_NONE_MATCH='"something-else"')
        self.assertEqual(response.status_code, 200)

    def test_if_range_with_other_etag_sends_whole_file(self):
        response = self.client.get(self.url, HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"old-version"')
        self.assertEqual(response.status_code, 200)
        self.assertEqual(body(response), self.data)

    def test_response_is_private_and_reveals_no_file_name(self):
        response = self.client.get(self.url, HTTP_RANGE="bytes=0-9")
        self.assertIn("private", response["Cache-Control"])
        self.assertEqual(response["Content-Disposition"], "inline")

    def test_writes_are_refused(self):
        self.assertEqual(self.client.post(self.url).status_code, 405)


class AudioAccessTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.reference = ClipFactory()
        cls.pair = PairFactory(condition=ConditionFactory(reference=cls.reference))
        cls.annotator = UserFactory(username="with-task", roles=["annotator"])
        cls.assignment = AssignmentFactory(annotator=cls.annotator, pair=cls.pair)
        cls.stranger = UserFactory(username="no-task", roles=["annotator"])
        cls.researcher = UserFactory(username="audio-researcher", roles=["researcher"])
        cls.unrelated = ClipFactory()

    def url(self, clip):
        return reverse("clip-audio", kwargs={"public_id": clip.public_id})

    def test_anonymous_gets_404(self):
        self.assertEqual(self.client.get(self.url(self.pair.clip_a)).status_code, 404)

    def test_annotator_without_assignment_gets_404(self):
        self.client.force_login(self.stranger)
        for clip in (self.pair.clip_a, self.pair.clip_b, self.reference):
            self.assertEqual(self.client.get(self.url(clip)).status_code, 404)

    def test_annotator_with_assignment_hears_both_clips_and_reference(self):
        self.client.force_login(self.annotator)
        for clip in (self.pair.clip_a, self.pair.clip_b, self.reference):
            self.assertEqual(self.client.get(self.url(clip)).status_code, 200)

    def test_annotator_cannot_reach_clips_of_other_pairs(self):
        self.client.force_login(self.annotator)
        self.assertEqual(self.client.get(self.url(self.unrelated)).status_code, 404)

    def test_researchers_hear_the_clips_of_their_studies_and_admins_any_clip(self):
        self.client.force_login(self.researcher)
        for clip in (self.pair.clip_a, self.reference, self.unrelated):
            self.assertEqual(self.client.get(self.url(clip)).status_code, 404)  # another researcher's study
        self.pair.study.collaborators.add(self.researcher)
        self.assertEqual(self.client.get(self.url(self.pair.clip_a), HTTP_RANGE="bytes=0-3").status_code, 206)
        self.assertEqual(self.client.get(self.url(self.reference)).status_code, 200)
        self.assertEqual(self.client.get(self.url(self.unrelated)).status_code, 404)
        self.client.force_login(UserFactory(username="audio-admin", roles=["admin"]))
        self.assertEqual(self.client.get(self.url(self.unrelated)).status_code, 200)

    def test_unknown_id_is_404_like_a_forbidden_one(self):
        self.client.force_login(self.researcher)
        self.assertEqual(self.client.get(reverse("clip-audio", kwargs={"public_id": uuid.uuid4()})).status_code, 404)

    def test_anonymous_user_object_is_refused(self):
        from annotation.access import clip_audible_by

        self.assertFalse(clip_audible_by(user=AnonymousUser(), clip=self.pair.clip_a))
