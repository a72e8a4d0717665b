"""Scoring runs of learned judges as GPU workers run them: batched pair jobs, prewarm sizes, the CUDA refusal, warm-up."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.services import clip_ingest_array, condition_get_or_create, pair_get_or_create
from scoring import services
from scoring.models import Judge, ScoringRun, Verdict
from tests.factories import StudyFactory

pytestmark = pytest.mark.slow


@pytest.mark.django_db
def test_a_run_of_a_cuda_judge_without_cuda_stores_failed_verdicts_saying_why(tiny_clap_dir, no_cuda):
    study = StudyFactory(name="no-gpu")
    condition, _ = condition_get_or_create(prompt="piano")
    clips = [clip_ingest_array(audio=(0.2 * np.sin(np.arange(16000) / (3 + i))).astype(np.float32), sample_rate=16000, fmt="WAV")[0] for i in range(2)]
    pair, _ = pair_get_or_create(study=study, condition=condition, clip_a=clips[0], clip_b=clips[1])
    judge = Judge.objects.create(key="clap-cuda", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), options={"device": "cuda"}, queue=Judge.Queue.GPU)
    run = services.run_create(judge=judge, pair_ids=[pair.pk])
    from scoring.tasks import run_start

    run_start.apply(args=(run.pk,))
    verdict = Verdict.objects.get(run=run)
    assert verdict.status == Verdict.Status.FAILED
    assert verdict.details["error"].startswith("JudgeUnavailable: judge clap-cuda cannot run here: device 'cuda' was asked for")


@pytest.mark.django_db
def test_a_pairwise_run_sends_groups_of_pairs_to_one_job_each(batched):
    holder, weights = batched
    study = StudyFactory(name="batched")
    condition, _ = condition_get_or_create(prompt="epic")
    t = np.arange(16000) / 16000
    clips = [clip_ingest_array(audio=(a * np.sin(2 * np.pi * 300 * t)).astype(np.float32), sample_rate=16000, fmt="WAV")[0] for a in (0.1, 0.2, 0.3, 0.4)]
    pairs = [pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[j])[0] for i, j in ((1, 0), (2, 0), (3, 0), (2, 1), (3, 1))]
    judge = Judge.objects.create(key="llm-b", kind=Judge.Kind.LLM_PAIRWISE, weights=weights, options={"family": "batched", "pairs_per_task": 2, "batch_size": 8}, queue=Judge.Queue.GPU)
    run = services.run_create(judge=judge, pair_ids=[p.pk for p in pairs])
    from scoring.tasks import run_start

    assert run_start.apply(args=(run.pk,)).get() == {"queued": 5, "prewarm_batches": 0}
    run.refresh_from_db()
    assert (run.state, run.done, run.failed) == (ScoringRun.State.DONE, 5, 0)
    assert holder["backend"].calls == [4, 4, 2]  # jobs of 2, 2 and 1 pairs, both orders each
    for verdict in run.verdicts.select_related("pair"):
        assert verdict.musicality_choice_id == verdict.pair.clip_a_id  # A is the louder clip in every pair
    # A redelivered job finds its verdicts and asks the model nothing.
    services.pairs_score(run_id=run.pk, pair_ids=[pairs[0].pk, pairs[1].pk])
    assert holder["backend"].calls == [4, 4, 2] and run.verdicts.count() == 5


@pytest.mark.django_db
def test_gpu_batch_and_clips_per_prewarm_job_are_separate_options(tiny_clap_dir):
    study = StudyFactory(name="prewarm")
    condition, _ = condition_get_or_create(prompt="piano")
    clips = [clip_ingest_array(audio=(0.2 * np.sin(np.arange(8000) / (3 + i))).astype(np.float32), sample_rate=16000, fmt="WAV")[0] for i in range(5)]
    pair_ids = [pair_get_or_create(study=study, condition=condition, clip_a=clips[i], clip_b=clips[i + 1])[0].pk for i in range(4)]
    judge = Judge.objects.create(key="clap-p", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), options={"prewarm_clips": 2, "batch_size": 1}, queue=Judge.Queue.GPU)
    run = services.run_create(judge=judge, pair_ids=pair_ids)
    assert services.run_dispatch(run_id=run.pk) == {"queued": 4, "prewarm_batches": 3}  # 5 clips, 2 per job
    run.refresh_from_db()
    assert run.done == 4


@pytest.mark.django_db
def test_judges_warm_loads_the_model_once_and_refuses_cuda_judges_without_cuda(tiny_clap_dir, no_network, no_cuda):
    from auditorium.runtime import cached_keys

    Judge.objects.create(key="clap-warm", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), queue=Judge.Queue.GPU)
    Judge.objects.create(key="clap-cuda", kind=Judge.Kind.CLAP, weights=str(tiny_clap_dir), options={"device": "cuda"}, queue=Judge.Queue.GPU)
    results = services.judges_warm(keys=["clap-warm", "clap-cuda", "nope"])
    assert results["clap-warm"] == "ok"
    assert results["clap-cuda"].startswith("JudgeUnavailable: judge clap-cuda cannot run here: device 'cuda' was asked for")
    assert results["nope"] == "no such judge"
    assert [k for k in cached_keys() if k[0] == "clap" and len(k) == 4] == [("clap", str(tiny_clap_dir), "cpu", "float32")]


def test_worker_start_warms_the_configured_judges_in_a_thread(monkeypatch):
    from scoring import tasks as worker

    calls = []
    monkeypatch.setattr(services, "judges_warm", lambda *, keys: calls.append(keys) or {k: "ok" for k in keys})
    monkeypatch.setenv("AUDITORIUM_WARM_JUDGES", " clap-main, aqa ,")
    thread = worker._warm_configured_judges()
    thread.join(timeout=30)
    assert calls == [["clap-main", "aqa"]]
    monkeypatch.setenv("AUDITORIUM_WARM_JUDGES", "")
    assert worker._warm_configured_judges() is None
