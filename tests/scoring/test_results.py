"""Which system won: known-truth coverage of the results section's intervals, its Bradley–Terry fit against choix, and the report's `systems` key."""

import choix
import numpy as np
import pytest
from django.urls import reverse

from scoring import results
from tests.factories import AnnotatorFactory, ClipFactory, ConditionFactory, JudgmentFactory, PairFactory, StudyFactory, SystemFactory, UserFactory
from tests.scoring.results_sim import simulate

NAMES = ["s0", "s1", "s2", "s3"]


def test_intervals_cover_the_truth_at_the_nominal_rate_over_200_studies():
    covered_rate = covered_strength = n_rate = n_strength = wrong_order = 0
    for seed in range(200):
        frame, truth = simulate(seed=seed)
        out = results.pairwise_results(results.oriented(frame, "musicality", NAMES), rounds=1000, seed=seed)
        for row in out["pairs"]:
            n_rate += 1
            covered_rate += row["lower"] <= truth["win_rate"][(row["system_a"], row["system_b"])] <= row["upper"]
        for row in out["strengths"]:
            n_strength += 1
            covered_strength += row["lower"] <= truth["strength"][row["system"]] <= row["upper"]
        for a in out["strengths"]:
            for b in out["strengths"]:
                # Intervals apart: the order they give must be the truth's.
                wrong_order += a["lower"] > b["upper"] and truth["strength"][a["system"]] < truth["strength"][b["system"]]
    assert 0.93 <= covered_rate / n_rate <= 0.97, covered_rate / n_rate
    assert 0.93 <= covered_strength / n_strength <= 0.97, covered_strength / n_strength
    assert wrong_order == 0


def test_bradley_terry_strengths_equal_choix_on_the_same_votes():
    frame, _ = simulate(seed=5)
    frame = frame[frame["score_musicality"] != 0.5]
    out = results.pairwise_results(results.oriented(frame, "musicality", NAMES), rounds=0, seed=0)
    index = {n: k for k, n in enumerate(NAMES)}
    data = [
        (index[a], index[b]) if s == 1.0 else (index[b], index[a]) for a, b, s in zip(frame["system_a"], frame["system_b"], frame["score_musicality"])
    ]
    # choix's penalty is alpha * sum(theta^2); ours is ridge / 2 * sum(theta^2).
    theirs = choix.opt_pairwise(len(NAMES), data, alpha=results.RIDGE / 2, tol=1e-12)
    ours = {row["system"]: row["strength"] for row in out["strengths"]}
    for name, k in index.items():
        assert ours[name] == pytest.approx(theirs[k] - theirs.mean(), abs=1e-4)  # the section rounds to 4 digits
    # Unrounded, the same fit agrees to 1e-6.
    from arena.leaderboard import bt_fit

    cells = results._cells(results.oriented(frame, "musicality", NAMES))
    i = np.array([p[0] for p in cells["pairs"]])
    j = np.array([p[1] for p in cells["pairs"]])
    theta = bt_fit(cells["wins"].sum(axis=0)[None], cells["games"].sum(axis=0)[None], i, j, len(NAMES), ridge=results.RIDGE, tol=1e-12)[0]
    assert np.abs(theta - (theirs - theirs.mean())).max() < 1e-6


def test_the_cluster_test_and_holm_name_a_clear_winner_and_leave_a_coin_flip_alone():
    frame, _ = simulate(seed=1, strengths=(1.0, 1.0, -1.0, -1.0), conditions=80)
    out = results.pairwise_results(results.oriented(frame, "musicality", NAMES), rounds=500, seed=0)
    rows = {(r["system_a"], r["system_b"]): r for r in out["pairs"]}
    assert rows[("s0", "s2")]["p_holm"] < 0.01 and rows[("s0", "s2")]["win_rate_a"] > 0.6
    assert rows[("s0", "s1")]["p_holm"] > 0.05
    assert all(r["p_holm"] >= r["p"] for r in out["pairs"])
    sentence = results.pair_sentence(rows[("s0", "s2")], "musicality")
    assert sentence.startswith("s0 beat s2 on musicality in ") and "after Holm" in sentence


def test_comparing_two_systems_gives_their_row_of_the_full_table_and_the_conditions_most_apart():
    frame, _ = simulate(seed=2)
    full = {(r["system_a"], r["system_b"]): r for r in results.pairwise_results(results.oriented(frame, "musicality", NAMES), rounds=300, seed=4)["pairs"]}
    two = results.compare_systems(frame, "s0", "s3", "musicality", rounds=300, seed=4)
    assert (two["votes"], two["win_rate_a"], two["p"]) == (full[("s0", "s3")]["votes"], full[("s0", "s3")]["win_rate_a"], full[("s0", "s3")]["p"])
    apart = results.per_condition(frame, "s0", "s3", "musicality")
    distance = (apart["win_rate_a"] - 0.5).abs().to_numpy()
    assert len(apart) == full[("s0", "s3")]["conditions"] and (np.diff(distance) <= 1e-12).all()


def test_rating_differences_are_paired_on_conditions_with_holm():
    import pandas as pd

    rng = np.random.default_rng(0)
    rows = []
    for c in range(12):
        base = rng.normal(3.0, 0.8)
        for system, shift in (("a", 1.0), ("b", 0.0), ("c", 0.05)):
            for _ in range(4):
                rows.append((system, c, "musicality", base + shift + rng.normal(0, 0.3)))
    out = results.rating_section(pd.DataFrame(rows, columns=["system", "condition", "dimension", "value"]), dimensions=["musicality"])
    diffs = {(r["system_a"], r["system_b"]): r for r in out["dimensions"]["musicality"]["differences"]}
    ab = diffs[("a", "b")]
    assert ab["conditions"] == 12 and ab["lower"] < ab["difference"] < ab["upper"] and 0.7 < ab["difference"] < 1.3
    assert ab["p_holm"] < 0.001 and diffs[("b", "c")]["p_holm"] > 0.05
    assert ab["sentence"].startswith("a was rated ") and "over 12 conditions" in ab["sentence"]


@pytest.mark.django_db
def test_the_report_api_and_csv_carry_the_systems_section(client):
    study = StudyFactory(name="systems")
    good, bad = SystemFactory(name="good"), SystemFactory(name="bad")
    voters = [AnnotatorFactory() for _ in range(3)]
    for n in range(6):
        condition = ConditionFactory()
        a, b = ClipFactory(system=good), ClipFactory(system=bad)
        pair = PairFactory(study=study, condition=condition, clip_a=a, clip_b=b)
        for k, voter in enumerate(voters):
            winner = a if (n + k) % 4 else b  # bad wins when n + k is a multiple of 4: 4 of the 18 votes
            JudgmentFactory(pair=pair, annotator=voter, a_clip=a, alignment_choice=winner, musicality_choice=winner)
    researcher = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(researcher)
    body = client.get(reverse("api-study-report", args=[study.name]), {"bootstrap": 200}).json()
    section = body["systems"]
    assert section["kind"] == "pairwise" and section["systems"] == ["bad", "good"]
    row = section["dimensions"]["musicality"]["pairs"][0]
    assert (row["system_a"], row["system_b"], row["votes"], row["conditions"]) == ("bad", "good", 18, 6)
    assert row["win_rate_a"] == pytest.approx(4 / 18, abs=1e-4)
    assert row["lower"] <= row["win_rate_a"] <= row["upper"]
    assert [s["system"] for s in section["dimensions"]["musicality"]["strengths"]] == ["good", "bad"]
    csv = client.get(reverse("api-study-report-table", args=[study.name, "system_pairs"]), {"bootstrap": 200})
    assert csv.status_code == 200 and b"good" in csv.content and b"after Holm" in csv.content
