"""The boards beyond the two plain ones: prompt categories, and the outlier-voter screen with the board it leaves.

Categories (`category_boards`): every battle is on one board per family.
- language: the writing system of the lyrics, or of the prompt when there are none, by the rule studies
  use for their conditions (scoring.results_section.script_of): latin, cjk, japanese, korean,
  cyrillic, arabic, ... or none;
- prompt: prebaked (drawn from the pool) or typed;
- genre and mood: tags read from the prompt by ARENA_PROMPT_TAGGER, a dotted path to
  `(prompt, lyrics) -> {"genre": [...], "mood": [...]}`; the default, `keyword_tags`, matches the
  whole words and phrases of GENRES and MOODS. A prompt can have several tags (it is on each of their
  boards) or none ("untagged"). A classifier plugs in through the same setting.
The instrumental / vocal split is the main pair of boards. A category board is fitted like them
(plain, and style-controlled when the live board is); one with fewer than `min_votes` counted votes
is not fitted and says how many it has.

The screen (`voter_screen`): a likelihood test per visitor of how far their decided votes (A or B;
ties and both-bad name no winner) depart from the board. Under the Bradley–Terry probabilities of the
board fitted without that visitor (leave one out) and with each other visitor's votes weighing at most
as much as the median visitor's (a few heavy voters cannot pull the yardstick toward themselves), a visitor's log-likelihood is compared with its distribution when votes are drawn
from those same probabilities (`simulations` draws of that visitor's own battles); the p-value is
(1 + draws at or below the observed) / (1 + simulations), and a visitor is flagged at p <= fp_rate.
An honest visitor, voting as the board does, is then flagged with probability at most fp_rate. The
board is fitted on every vote, the flagged visitors are left out, it is fitted again and every visitor
tested against that, until the flagged set stops changing (at most SCREEN_ROUNDS fits): a cohort
cannot hide by pulling the board toward itself. The last fit's draws are the ones reported. Visitors
with fewer than `min_votes` decided votes are not tested (counted as untested).

The screened board (`screened_boards`) leaves out the flagged visitors' votes and down-weights repeated
prompts (`repeat_weights`): one visitor's battles on the same prompt between the same two systems count
once in all, and a typed prompt on more than REPEAT_CAP battles counts as REPEAT_CAP of them (Chatbot
Arena caps its most frequent prompts the same way, by subsampling).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

import numpy as np

from .leaderboard import (
    AUDITORIUM,
    BOARDS,
    VOTE_CODES,
    VoteRow,
    board_rows,
    board_with_style,
    boards_for_method,
    bt_fit,
    to_rating,
    votes_encode,
)

FAMILIES = {
    "language": "Language of the prompt",
    "prompt": "Prebaked or typed prompt",
    "genre": "Genre (from the prompt)",
    "mood": "Mood (from the prompt)",
}
UNTAGGED = "untagged"

# Whole words or phrases, matched on the prompt lowercased with punctuation as spaces.
GENRES = {
    "rock": ("rock", "punk", "metal", "grunge", "hard rock", "indie rock", "shoegaze"),
    "pop": ("pop", "synthpop", "k pop", "j pop", "dance pop"),
    "electronic": ("electronic", "edm", "techno", "house", "trance", "dubstep", "drum and bass", "dnb", "synthwave", "electro", "idm", "breakbeat"),
    "hip-hop": ("hip hop", "hiphop", "rap", "trap", "boom bap", "drill", "grime"),
    "jazz": ("jazz", "swing", "bebop", "bossa nova", "big band", "fusion"),
    "classical": ("classical", "orchestral", "orchestra", "symphony", "symphonic", "string quartet", "baroque", "sonata", "concerto", "chamber"),
    "folk": ("folk", "country", "bluegrass", "americana", "singer songwriter"),
    "ambient": ("ambient", "drone", "soundscape", "new age"),
    "lo-fi": ("lo fi", "lofi", "chillhop"),
    "r&b": ("r&b", "rnb", "soul", "funk", "motown", "gospel", "disco"),
    "blues": ("blues",),
    "reggae": ("reggae", "dub", "ska", "dancehall"),
    "latin": ("latin", "salsa", "reggaeton", "samba", "bachata", "cumbia", "tango", "flamenco"),
    "cinematic": ("cinematic", "film score", "soundtrack", "trailer", "epic score"),
}
MOODS = {
    "happy": ("happy", "joyful", "cheerful", "uplifting", "upbeat", "bright", "playful", "sunny", "fun"),
    "sad": ("sad", "melancholic", "melancholy", "mournful", "somber", "sombre", "heartbroken", "nostalgic", "bittersweet", "lonely"),
    "calm": ("calm", "relaxing", "peaceful", "soothing", "gentle", "mellow", "serene", "chill", "meditative", "dreamy", "slow"),
    "energetic": ("energetic", "driving", "intense", "powerful", "aggressive", "fast", "hype", "pumping", "frantic"),
    "dark": ("dark", "ominous", "eerie", "sinister", "haunting", "brooding", "tense", "menacing"),
    "romantic": ("romantic", "love", "tender", "sensual", "intimate"),
    "epic": ("epic", "heroic", "triumphant", "grand", "majestic", "anthemic"),
}
_WORDS = re.compile(r"[^\w&]+", re.UNICODE)


def _phrases(table: dict[str, tuple[str, ...]]) -> list[tuple[str, re.Pattern]]:
    return [(tag, re.compile(r"(?<!\S)(?:" + "|".join(re.escape(k) for k in keys) + r")(?!\S)")) for tag, keys in table.items()]


_GENRE_RULES, _MOOD_RULES = _phrases(GENRES), _phrases(MOODS)


def keyword_tags(prompt: str, lyrics: str = "") -> dict[str, list[str]]:
    """Genre and mood tags of a prompt by the keyword tables above (the lyrics are not read: they are not a request)."""
    text = " " + _WORDS.sub(" ", (prompt or "").lower()).replace("_", " ") + " "
    return {"genre": [tag for tag, rule in _GENRE_RULES if rule.search(text)], "mood": [tag for tag, rule in _MOOD_RULES if rule.search(text)]}


def language_of(row: VoteRow) -> str:
    """The writing system of the lyrics, or of the prompt without lyrics: the rule study conditions are tagged by."""
    from scoring.results_section import script_of

    return script_of(row.lyrics if row.lyrics.strip() else row.prompt)


def categories_of(row: VoteRow, tagger: Callable[[str, str], dict]) -> list[tuple[str, str]]:
    """(family, value) for every category board the battle is on."""
    tags = tagger(row.prompt, row.lyrics) or {}
    out = [("language", language_of(row)), ("prompt", "prebaked" if row.is_prebaked else "typed")]
    for family in ("genre", "mood"):
        values = sorted(set(tags.get(family) or ())) or [UNTAGGED]
        out += [(family, value) for value in values]
    return out


def _counted(rows: Iterable[VoteRow], both_bad: str) -> int:
    return sum(1 for r in rows if r.system_a != r.system_b and (both_bad == "tie" or r.vote != "both_bad"))


def category_boards(rows: Iterable[VoteRow], *, tagger: Callable[[str, str], dict], min_votes_board: int, **board_options) -> dict:
    """Per family, per value: its board (board_with_style's options), or `too_few` with its vote count."""
    rows = list(rows)
    both_bad = board_options.get("both_bad", "exclude")
    groups: dict[tuple[str, str], list[VoteRow]] = defaultdict(list)
    for r in rows:
        for key in categories_of(r, tagger):
            groups[key].append(r)
    families = {}
    for family, label in FAMILIES.items():
        values = {}
        for (fam, value), members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0][1])):
            if fam != family:
                continue
            counted = _counted(members, both_bad)
            if counted < min_votes_board:
                values[value] = {"votes": counted, "too_few": True, "rows": [], "preliminary": []}
            else:
                values[value] = {**board_with_style(members, **board_options), "too_few": False}
        families[family] = {"label": label, "values": values}
    return {"min_votes": min_votes_board, "families": families}


# --- The outlier screen --------------------------------------------------------------------------------

SIMULATION_CELLS = 4_000_000
SCREEN_ROUNDS = 10


LOO_BATCH = 256


def _decided(rows: list[VoteRow], flagged: set[str], both_bad: str) -> list[tuple[str, float, bool]]:
    """(visitor, P(A wins), voted A) for every decided vote, P from the board fitted without that visitor's
    own votes and without the flagged visitors' (leave one out: a visitor is never measured against a board
    their own votes pulled, so leaving a visitor out of the fit does not by itself make them look worse).

    In each fit a visitor's votes weigh at most as much as the median visitor's, so a few heavy voters
    cannot pull the yardstick toward themselves."""
    out = []
    for board in BOARDS:
        on_board = [r for r in rows if r.is_instrumental == (board == "instrumental") and r.system_a != r.system_b and (both_bad == "tie" or r.vote != "both_bad")]
        names = sorted({r.system_a for r in on_board} | {r.system_b for r in on_board})
        if len(names) < 2:
            continue
        index = {name: k for k, name in enumerate(names)}
        per_visitor = Counter(r.visitor for r in on_board)
        median = float(np.median(list(per_visitor.values())))
        pair_keys = sorted({(min(index[r.system_a], index[r.system_b]), max(index[r.system_a], index[r.system_b])) for r in on_board})
        pair_of = {key: k for k, key in enumerate(pair_keys)}
        visitors = sorted(per_visitor)
        row_of = {v: k for k, v in enumerate(visitors)}
        own_wins, own_games = np.zeros((len(visitors), len(pair_keys))), np.zeros((len(visitors), len(pair_keys)))
        for r in on_board:
            i, j = index[r.system_a], index[r.system_b]
            low = min(i, j)
            weight = min(1.0, median / per_visitor[r.visitor])
            share = 0.5 if r.vote in ("tie", "both_bad") else float((r.vote == "a") == (i == low))
            k = pair_of[(low, max(i, j))]
            own_wins[row_of[r.visitor], k] += weight * share
            own_games[row_of[r.visitor], k] += weight
        counted = np.array([v not in flagged for v in visitors])
        total_wins, total_games = own_wins[counted].sum(axis=0), own_games[counted].sum(axis=0)
        pair_i, pair_j = np.array([k[0] for k in pair_keys]), np.array([k[1] for k in pair_keys])
        theta = np.zeros((len(visitors), len(names)))
        for start in range(0, len(visitors), LOO_BATCH):
            part = slice(start, start + LOO_BATCH)
            keep = counted[part][:, None]
            theta[part] = bt_fit(total_wins - own_wins[part] * keep, total_games - own_games[part] * keep, pair_i, pair_j, len(names))
        for r in on_board:
            if r.vote in ("a", "b"):
                t = theta[row_of[r.visitor]]
                p = 1.0 / (1.0 + np.exp(-(t[index[r.system_a]] - t[index[r.system_b]])))
                out.append((r.visitor, float(p), r.vote == "a"))
    return out


def _p_values(decided: list[tuple[str, float, bool]], *, min_votes: int, simulations: int, seed: int) -> dict[str, dict]:
    """Per tested visitor: votes, observed and expected log-likelihood, Monte Carlo p-value (low: unlike the board)."""
    by_visitor: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for visitor, p, voted_a in decided:
        by_visitor[visitor].append((p, voted_a))
    tested = sorted(v for v, votes in by_visitor.items() if len(votes) >= min_votes)
    rng = np.random.default_rng(seed)
    # Visitors in blocks, so one block's draws stay within SIMULATION_CELLS numbers.
    blocks, block, size = [], [], 0
    for visitor in tested:
        votes = len(by_visitor[visitor])
        if block and (size + votes) * simulations > SIMULATION_CELLS:
            blocks.append(block)
            block, size = [], 0
        block.append(visitor)
        size += votes
    if block:
        blocks.append(block)
    out = {}
    for block in blocks:
        out.update(_block_p_values(block, by_visitor, simulations, rng))
    return out


def _block_p_values(block, by_visitor, simulations, rng) -> dict[str, dict]:
    p = np.clip(np.array([q for v in block for q, _ in by_visitor[v]]), 1e-12, 1 - 1e-12)
    voted_a = np.array([a for v in block for _, a in by_visitor[v]])
    starts = np.cumsum([0] + [len(by_visitor[v]) for v in block[:-1]])
    log_a, log_b = np.log(p), np.log1p(-p)
    observed = np.add.reduceat(np.where(voted_a, log_a, log_b), starts)
    expected = np.add.reduceat(p * log_a + (1 - p) * log_b, starts)
    draws = rng.random((simulations, len(p))) < p
    simulated = np.add.reduceat(np.where(draws, log_a, log_b), starts, axis=1)
    at_or_below = (simulated <= observed[None, :] + 1e-9).sum(axis=0)
    p_values = (1 + at_or_below) / (1 + simulations)
    return {
        v: {"votes": len(by_visitor[v]), "log_likelihood": round(float(observed[k]), 3), "expected": round(float(expected[k]), 3), "p_value": round(float(p_values[k]), 6)}
        for k, v in enumerate(block)
    }


def _canonical(rows: Iterable[VoteRow]) -> list[VoteRow]:
    """The votes in one order whatever the source (database or release): the simulations then draw alike."""
    return sorted(rows, key=lambda r: (r.visitor, r.timestamp or 0.0, r.system_a, r.system_b, r.vote, r.prompt, r.is_instrumental))


def voter_screen(rows: Iterable[VoteRow], *, fp_rate: float = 0.01, min_votes: int = 10, simulations: int = 1000, seed: int = 0, both_bad: str = "exclude") -> dict:
    """The per-visitor likelihood test (module docstring): who is flagged, with their figures, and the counts."""
    if not 0 < fp_rate < 1:
        raise ValueError(f"the false-positive rate must be between 0 and 1, not {fp_rate!r}")
    rows = _canonical(rows)
    flagged: set[str] = set()
    rounds = 0
    # Fitted on every vote, a cohort pulls the board toward itself and hides; refitted without the
    # visitors flagged so far, until the flagged set no longer changes.
    for rounds in range(1, SCREEN_ROUNDS + 1):
        final = _p_values(_decided(rows, flagged, both_bad), min_votes=min_votes, simulations=simulations, seed=seed)
        now = {v for v, r in final.items() if r["p_value"] <= fp_rate}
        if now == flagged:
            break
        flagged = now
    flagged = sorted(flagged)
    visitors = {r.visitor for r in rows}
    return {
        "fp_rate": fp_rate,
        "min_votes": min_votes,
        "simulations": simulations,
        "refits": rounds,
        "visitors": len(visitors),
        "tested": len(final),
        "untested": len(visitors) - len(final),
        "flagged": [{"visitor": v, **final[v]} for v in sorted(flagged, key=lambda v: (final[v]["p_value"], v))],
        "flagged_votes": sum(1 for r in rows if r.visitor in set(flagged)),
    }


REPEAT_CAP = 20


def _prompt_text(r: VoteRow) -> tuple[str, str]:
    return (" ".join(r.prompt.lower().split()), " ".join(r.lyrics.lower().split()))


def repeat_weights(rows: list[VoteRow], *, cap: int = REPEAT_CAP) -> list[float]:
    """Per vote, the weight repeats leave it (the prompt compared by its normalised text and lyrics):

    - one visitor's votes on the same prompt and the same two systems count once in all (1 / their number);
    - a typed prompt on more than `cap` battles counts `cap` battles' worth in all (cap / its number), so a
      prompt pasted again and again does not decide the board; prebaked prompts repeat by design and are not capped.
    """
    battle = Counter((r.visitor, _prompt_text(r), frozenset((r.system_a, r.system_b))) for r in rows)
    typed = Counter(_prompt_text(r) for r in rows if not r.is_prebaked)
    weights = []
    for r in rows:
        w = 1.0 / battle[(r.visitor, _prompt_text(r), frozenset((r.system_a, r.system_b)))]
        if not r.is_prebaked and typed[_prompt_text(r)] > cap:
            w *= cap / typed[_prompt_text(r)]
        weights.append(w)
    return weights


def weighted_board(
    rows: list[VoteRow], weights: list[float], *, rounds: int = 1000, seed: int = 0, both_bad: str = "exclude",
    anchor: str | None = None, anchor_rating: float = 1000.0, min_votes: int = 0, hidden: Iterable[str] = (),
) -> dict:
    """The plain board with a weight per vote: counts become weighted sums, and the bootstrap still resamples votes."""
    meta = {"votes": 0, "weighted_votes": 0.0, "rounds": rounds, "seed": seed, "anchor": anchor, "anchor_rating": anchor_rating, "min_votes": min_votes}
    if not rows:
        return {**meta, "rows": [], "preliminary": []}
    names, a, b, codes = votes_encode(rows)
    w = np.asarray(weights, dtype=np.float64)
    keep = a != b
    if both_bad == "exclude":
        keep &= codes != VOTE_CODES["both_bad"]
    a, b, w = a[keep], b[keep], w[keep]
    codes = np.where(codes[keep] == VOTE_CODES["both_bad"], VOTE_CODES["tie"], codes[keep])
    used = np.unique(np.concatenate([a, b]))
    if len(used) < 2:
        return {**meta, "votes": int(keep.sum()), "rows": [], "preliminary": []}
    remap = np.full(len(names), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    a, b, names, n = remap[a], remap[b], [names[k] for k in used], len(used)
    low, high = np.minimum(a, b), np.maximum(a, b)
    # The lower-indexed system's share of each vote's win: 1, 0 or 1/2 for a tie.
    share = np.where(codes == VOTE_CODES["tie"], 0.5, ((codes == VOTE_CODES["a"]) == (a == low)).astype(np.float64))
    cells, counts = np.unique(np.stack([low, high, share, w], axis=1), axis=0, return_counts=True)
    pair_codes, pair_of_cell = np.unique(cells[:, 0].astype(np.int64) * n + cells[:, 1].astype(np.int64), return_inverse=True)
    to_pair = np.zeros((len(cells), len(pair_codes)))
    to_pair[np.arange(len(cells)), pair_of_cell] = 1.0
    pair_i, pair_j = pair_codes // n, pair_codes % n

    def ratings(cell_counts: np.ndarray) -> np.ndarray:
        games = (cell_counts * cells[:, 3]) @ to_pair
        wins = (cell_counts * cells[:, 3] * cells[:, 2]) @ to_pair
        return to_rating(bt_fit(wins, games, pair_i, pair_j, n), names, anchor if anchor in names else None, anchor_rating)

    total = int(counts.sum())
    point = ratings(counts[None].astype(np.float64))[0]
    if rounds > 0:
        rng = np.random.default_rng(seed)
        lower, upper = np.percentile(ratings(rng.multinomial(total, counts / total, size=rounds).astype(np.float64)), [2.5, 97.5], axis=0)
    else:
        lower = upper = point
    per_system = np.zeros(n, dtype=np.int64)
    np.add.at(per_system, cells[:, 0].astype(np.int64), counts)
    np.add.at(per_system, cells[:, 1].astype(np.int64), counts)
    meta.update(votes=total, weighted_votes=round(float((counts * cells[:, 3]).sum()), 2))
    return {**meta, **board_rows(names, point, lower, upper, per_system, hidden=hidden, min_votes=min_votes)}


def screened_boards(rows: Iterable[VoteRow], *, screen: dict, **board_options) -> dict:
    """Both boards without the flagged visitors' votes, repeated prompts down-weighted; with what was left out (plain fits only)."""
    rows = list(rows)
    board_options.pop("style", None)
    flagged = {f["visitor"] for f in screen["flagged"]}
    kept = [r for r in rows if r.visitor not in flagged]
    weights = repeat_weights(kept)
    out = {"flagged_votes_left_out": len(rows) - len(kept), "repeated_votes": sum(1 for w in weights if w < 1.0), "boards": {}}
    for board in BOARDS:
        pairs = [(r, w) for r, w in zip(kept, weights, strict=True) if r.is_instrumental == (board == "instrumental")]
        out["boards"][board] = weighted_board([r for r, _ in pairs], [w for _, w in pairs], **board_options)
    return out


def boards_all(rows: Iterable[VoteRow], *, method: str, vocal: Iterable[str] = (), categories: dict | None = None, screen: dict | None = None, **options) -> dict:
    """The two boards by `method` and, for ours, the category boards and the screen when their options are given.

    categories: {"tagger", "min_votes_board"}; screen: voter_screen's options.
    """
    rows = list(rows)
    result = boards_for_method(rows, method=method, vocal=vocal, **options)
    if method != AUDITORIUM:
        return result
    board_options = {k: v for k, v in options.items() if k in ("rounds", "seed", "both_bad", "anchor", "anchor_rating", "min_votes", "hidden", "style")}
    if categories is not None:
        result["categories"] = category_boards(rows, **categories, **board_options)
    if screen is not None:
        found = voter_screen(rows, both_bad=options.get("both_bad", "exclude"), **screen)
        result["screen"] = {**found, **screened_boards(rows, screen=found, **board_options)}
    return result
