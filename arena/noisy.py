"""A Bradley–Terry board that models each voter's reliability (crowd-kit's noisy Bradley–Terry), beside the plain one.

Each voter either follows the systems' strengths (with probability `skill`) or answers by a
personal side preference; a cohort of careless or automated voters then shows as low skills,
and their votes pull the ratings less. Ties and "both bad" votes name no winner and are left
out. Ratings are put on the plain board's Elo scale (mean 1000) for comparison; there is no
interval (the fit has no bootstrap here).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .leaderboard import BOARDS, ELO_PER_NAT
from .models import Vote

LOW_SKILL = 0.5
MIN_VOTES = 10


def voter_vote_rows() -> list[tuple[str, str, str, str, bool]]:
    """(voter pseudonym, system A, system B, vote, instrumental) for every stored vote."""
    return list(
        Vote.objects.order_by("id").values_list(
            "visitor__pseudonym", "battle__system_a__system__name", "battle__system_b__system__name", "choice", "battle__is_instrumental"
        )
    )


def noisy_board(rows, *, seed: int = 0, hidden=()) -> dict:
    """One board from (voter, a, b, vote) rows: ratings, and the voters' skill distribution."""
    decided = [(voter, a, b, a if vote == "a" else b) for voter, a, b, vote in rows if vote in ("a", "b") and a != b]
    if len(decided) < MIN_VOTES:
        return {"rows": [], "votes": len(decided), "voters": 0, "low_skill_voters": 0, "low_skill_votes": 0}
    from crowdkit.aggregation import NoisyBradleyTerry

    frame = pd.DataFrame(decided, columns=["worker", "left", "right", "label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NoisyBradleyTerry(n_iter=200, random_state=seed).fit(frame)
    scores = model.scores_.clip(1e-9, 1 - 1e-9)
    strength = np.log(scores / (1 - scores))
    ratings = ELO_PER_NAT * (strength - strength.mean()) + 1000.0
    votes = pd.concat([frame["left"], frame["right"]]).value_counts()
    skills = model.skills_
    low = skills[skills < LOW_SKILL].index
    table = [
        {"system": name, "rating": round(float(ratings[name]), 1), "votes": int(votes.get(name, 0))}
        for name in ratings.sort_values(ascending=False).index
        if name not in hidden
    ]
    return {
        "rows": table,
        "votes": len(decided),
        "voters": int(len(skills)),
        "low_skill_voters": int(len(low)),
        "low_skill_votes": int(frame["worker"].isin(low).sum()),
        "skill_quartiles": [round(float(q), 3) for q in np.quantile(skills.to_numpy(), [0.25, 0.5, 0.75])],
        "skills": {str(voter): round(float(value), 4) for voter, value in skills.items()},
    }


def noisy_boards(rows, *, seed: int = 0, hidden=()) -> dict:
    """Both boards (instrumental, vocal) from voter_vote_rows()."""
    return {
        board: noisy_board([(v, a, b, vote) for v, a, b, vote, instrumental in rows if instrumental == (board == "instrumental")], seed=seed, hidden=hidden)
        for board in BOARDS
    }
