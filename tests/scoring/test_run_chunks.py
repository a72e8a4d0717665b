"""A run's pairs travel in chunks: each pair is scored once however often a chunk is delivered, and the run finishes.

The in-process tests deliver every chunk twice through the eager worker; the last one runs the worker
process the demo runs (threads, two at once, kombu's SQLite broker) with every chunk queued twice,
so the two copies of a chunk run side by side.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.test import TestCase

from annotation.models import Clip
from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import broadcast, queueing, services, tasks
from scoring.judges.signal import SignalJudge
from scoring.models import ClipScore, Judge, ScoringRun, Verdict
from tests.factories import StudyFactory
from tests.live_processes import LEAVE_OUT, database_env

ROOT = Path(__file__).resolve().parents[2]


def _clip(freq: float, *, faulty: bool) -> Clip:
    t = np.arange(8000) / 16000
    wave = 0.3 * np.sin(2 * np.pi * freq * t)
    if faulty:
        wave = np.clip(wave * 8, -0.5, 0.5)
    return clip_ingest_array(audio=wave.astype(np.float32), sample_rate=16000, fmt="WAV")[0]


def _study(name: str, conditions: int, clips_per_condition: int):
    """Every pair of a condition's clips, per condition: returns the study and its pairs in creation order."""
    study = StudyFactory(name=name)
    pairs = []
    for c in range(conditions):
        condition, _ = condition_get_or_create(prompt=f"{name} condition {c}")
        clips = [_clip(200.0 + 40 * i + 5 * c, faulty=bool(i % 2)) for i in range(clips_per_condition)]
        for i in range(len(clips)):
            for j in range(i + 1, len(clips)):
                pairs.append(pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[j])[0])
    return study, pairs


class ChunkedRunTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        # 3 conditions x 4 clips = 18 pairs; chunks of 8 keep a condition's 6 pairs together.
        cls.study, cls.pairs = _study("chunks", conditions=3, clips_per_condition=4)

    def _run_delivering_twice(self, judge: Judge) -> tuple[ScoringRun, list[tuple]]:
        """Create a run whose every job the eager worker runs twice; returns the run and the jobs as queued."""
        queued = []
        real = queueing.task

        class Twice:
            def __init__(self, name):
                self.task = real(name)

            def delay(self, *args):
                return self.task.delay(*args)

            def apply_async(self, args, **options):
                queued.append((self.task.name, args))
                self.task.apply_async(args, **options)
                return self.task.apply_async(args, **options)

        queueing.task = Twice
        try:
            with self.captureOnCommitCallbacks(execute=True):
                run = services.run_create(judge=judge, study=self.study)
        finally:
            queueing.task = real
        run.refresh_from_db()
        return run, queued

    def test_every_pair_is_scored_once_when_each_chunk_is_delivered_twice_and_the_run_finishes(self):
        judge = Judge.objects.create(key="signal-twice", kind=Judge.Kind.SIGNAL)
        before = SignalJudge.encode_calls
        pushes = []
        real_push = broadcast.run_progress_broadcast
        broadcast.run_progress_broadcast = pushes.append
        try:
            run, queued = self._run_delivering_twice(judge)
        finally:
            broadcast.run_progress_broadcast = real_push
        chunks = [args[1] for name, args in queued if name == queueing.PAIRS_SCORE]
        self.assertEqual([name for name, _ in queued], [queueing.PAIRS_SCORE] * 3, "one chunk per condition, no prewarm for a CPU judge")
        self.assertEqual(sorted(p for chunk in chunks for p in chunk), sorted(p.pk for p in self.pairs))
        for chunk in chunks:
            self.assertEqual(len({p.condition_id for p in self.pairs if p.pk in chunk}), 1)
        self.assertEqual((run.state, run.total, run.done, run.failed), (ScoringRun.State.DONE, 18, 18, 0))
        self.assertEqual(sorted(Verdict.objects.filter(run=run).values_list("pair_id", flat=True)), sorted(p.pk for p in self.pairs))
        # 12 clips, each decoded once: the second delivery of a chunk finds its verdicts and decodes nothing.
        self.assertEqual(SignalJudge.encode_calls - before, 12)
        self.assertEqual(ClipScore.objects.filter(judge=judge).count(), 12)
        # Progress moves per chunk (the second deliveries push the same count again), not per pair.
        self.assertEqual([p["done"] for p in pushes], [6, 12, 18])
        self.assertEqual(pushes[-1]["state"], ScoringRun.State.DONE)

    def test_a_redelivered_chunk_after_the_run_finished_writes_nothing(self):
        judge = Judge.objects.create(key="signal-again", kind=Judge.Kind.SIGNAL)
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=judge, study=self.study)
        stored = list(Verdict.objects.filter(run=run).order_by("pk").values_list("pk", "pair_id", "created_at"))
        result = tasks.pairs_score_task.apply(args=(run.pk, [p.pk for p in self.pairs[:8]])).get()
        self.assertEqual(result, {"verdicts": 8})
        self.assertEqual(list(Verdict.objects.filter(run=run).order_by("pk").values_list("pk", "pair_id", "created_at")), stored)
        run.refresh_from_db()
        self.assertEqual((run.state, run.done, run.failed), (ScoringRun.State.DONE, 18, 0))

    def test_an_unreadable_clip_fails_only_its_pairs_in_the_chunk(self):
        judge = Judge.objects.create(key="signal-broken", kind=Judge.Kind.SIGNAL)
        broken = self.pairs[0].clip_a  # clip 0 of condition 0: in 3 of its 6 pairs
        path = Path(broken.file.path)
        self.addCleanup(path.write_bytes, path.read_bytes())
        path.write_bytes(b"not audio")
        with self.captureOnCommitCallbacks(execute=True):
            run = services.run_create(judge=judge, study=self.study)
        run.refresh_from_db()
        failed = set(Verdict.objects.filter(run=run, status=Verdict.Status.FAILED).values_list("pair_id", flat=True))
        self.assertEqual(failed, {p.pk for p in self.pairs if broken.pk in (p.clip_a_id, p.clip_b_id)})
        self.assertEqual((run.state, run.done, run.failed), (ScoringRun.State.DONE, 15, 3))

    def test_pairs_per_task_option_sets_the_chunk_size_and_one_pair_goes_out_alone(self):
        run = ScoringRun.objects.create(judge=Judge.objects.create(key="signal-4", kind=Judge.Kind.SIGNAL, options={"pairs_per_task": 4}), pair_ids=[], total=0)
        ids = [p.pk for p in self.pairs]
        chunks = queueing.run_chunks(run=run, pair_ids=ids, pairwise=False)
        self.assertEqual([len(c) for c in chunks], [4, 2, 4, 2, 4, 2])
        self.assertEqual(queueing.run_chunks(run=run, pair_ids=ids[:6], pairwise=True), [ids[:4], ids[4:6]])
        run.judge.options = {"pairs_per_task": 1}
        self.assertEqual(queueing.run_chunks(run=run, pair_ids=ids[:3], pairwise=False), [[i] for i in ids[:3]])


SUCCEEDED = re.compile(rb"Task (scoring\.pairs?_score)\[[0-9a-f-]+\] succeeded")


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_demo_worker_scores_each_pair_once_with_every_chunk_queued_twice(tmp_path):
    """The worker as the demo starts it, on kombu's SQLite broker; the two copies of each chunk run side by side,
    and the chunks' own progress updates finish the run."""
    from kombu import Connection

    from auditorium.celery import app

    study, pairs = _study("chunks-worker", conditions=3, clips_per_condition=4)
    judge = Judge.objects.create(key="signal-worker", kind=Judge.Kind.SIGNAL)
    run = ScoringRun.objects.create(judge=judge, study=study, pair_ids=[p.pk for p in pairs], total=len(pairs))
    chunks = queueing.run_chunks(run=run, pair_ids=run.pair_ids, pairwise=False)
    broker = f"sqla+sqlite:///{tmp_path / 'celery.sqlite'}"
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with Connection(broker) as conn:
            # Each chunk twice in a row, so the worker's two threads take both copies at once.
            for chunk in chunks:
                for _ in range(2):
                    tasks.pairs_score_task.apply_async((run.pk, chunk), queue="cpu", connection=conn)
    finally:
        app.conf.task_always_eager = eager
    assert not Verdict.objects.filter(run=run).exists()

    env = {k: v for k, v in os.environ.items() if k not in LEAVE_OUT}
    env.update(
        PYTHONPATH=f"{ROOT / 'platform'}:{ROOT}",
        DJANGO_SETTINGS_MODULE="auditorium.settings",
        DJANGO_DEBUG="true",
        AUDITORIUM_DATA_DIR=str(tmp_path),
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        CELERY_BROKER_URL=broker,
        CELERY_RESULT_BACKEND=f"db+sqlite:///{tmp_path / 'results.sqlite'}",
        LOG_LEVEL="INFO",
        PYTHONUNBUFFERED="1",
        **database_env(),
    )
    log = tmp_path / "worker.log"
    command = [
        sys.executable, "-m", "celery", "-A", "auditorium", "worker", "-Q", "cpu,gpu", "--pool", "threads", "--concurrency", "2",
        "--hostname", "chunks@%h", "--without-gossip", "--without-mingle", "--loglevel", "INFO",
    ]  # fmt: skip
    worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        expected = 2 * len(chunks)
        deadline = time.monotonic() + 180
        while len(SUCCEEDED.findall(log.read_bytes())) < expected:
            assert worker.poll() is None, f"the worker stopped:\n{log.read_text(errors='replace')[-3000:]}"
            assert time.monotonic() < deadline, f"jobs unfinished after 180 s:\n{log.read_text(errors='replace')[-3000:]}"
            time.sleep(0.2)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
    verdicts = list(Verdict.objects.filter(run=run).values_list("pair_id", flat=True))
    assert sorted(verdicts) == sorted(p.pk for p in pairs)
    run.refresh_from_db()
    assert (run.state, run.done, run.failed) == (ScoringRun.State.DONE, len(pairs), 0)
    assert ClipScore.objects.filter(judge=judge).count() == 12
