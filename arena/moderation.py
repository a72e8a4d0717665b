"""Prompt moderation and routing.

The moderation hook is a dotted path (setting ARENA_MODERATION_HOOK) to a callable
`(prompt: str, lyrics: str) -> {"allowed": bool, "reasons": [str, ...]}`; reasons are
machine-readable codes the page turns into words. The default is rule based: it
needs no network and its decisions can be tested and explained.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from better_profanity import Profanity
from better_profanity.utils import get_complete_path_of_file, read_wordlist
from django.conf import settings
from django.utils.module_loading import import_string


REASON_TEXT = {
    "artist_reference": "Please describe the music itself instead of naming an artist or band.",
    "copyrighted_material": "Please do not ask for existing songs, covers or copyrighted lyrics.",
    "profanity": "Please keep prompts and lyrics free of slurs and profanity.",
    "explicit": "Sexual content is not allowed.",
}

# A small, deliberately conservative list; deployments plug in a better hook.
ARTISTS = [
    "taylor swift", "beyonce", "drake", "kanye west", "ed sheeran", "adele", "billie eilish", "the beatles", "beatles",
    "rolling stones", "michael jackson", "madonna", "eminem", "rihanna", "lady gaga", "bruno mars", "ariana grande",
    "justin bieber", "bts", "blackpink", "coldplay", "radiohead", "nirvana", "metallica", "queen", "abba", "daft punk",
    "hans zimmer", "john williams", "elvis presley", "bob dylan", "kendrick lamar", "travis scott", "the weeknd",
    "dua lipa", "olivia rodrigo", "bad bunny", "shakira", "pink floyd", "led zeppelin", "frank sinatra", "mozart",
]
# Composers long in the public domain are allowed as style references.
PUBLIC_DOMAIN = {"mozart"}
# The profanity check takes better-profanity's word list (with its spelled-out, leetspeak and
# inflected forms) but only the entries built on these stems: the full list also refuses words
# a music prompt needs ("organ", "punky", "hell", "god", "stroke", "strip", "rum", "virgin").
PROFANITY_STEMS = (
    "fuck", "fuk", "fcuk", "fvck", "fxck", "phuk", "phuck", "phuq", "f_u_c_k", "f-u-c-k", "f.u.c.k", "shit", "sh1t", "sh!t",
    "s_h_i_t", "s-h-i-t", "s.h.i.t", "cunt", "nigg", "n1gg", "nigga", "fag", "faig", "bitch", "b!tch", "biatch", "whore", "wh0re",
    "slut", "retard", "reetard", "rtard", "r-tard", "twat", "wank", "pussy", "pussi", "asshole", "motherf", "muthaf", "mothaf",
    "kike", "kyke", "spic", "spik", "chink", "dyke", "tranny", "bastard", "dickhead", "cocksuck", "jizz", "bollock", "wetback",
)
# Slurs and words the library's list lacks, or has only in some forms.
PROFANITY_EXTRA = ("fucking", "fucker", "fucked", "fuckin", "shitty", "shite", "bullshit", "cunts", "bitches", "retards", "faggots", "niggers")
EXPLICIT = ["porn", "sex scene", "nude", "naked", "orgasm"]
_COPYRIGHT = re.compile(r"\b(cover of|cover version|remix of|lyrics (?:of|from|to)|the song [\"'“])", re.I)
VOCAL_WORDS = re.compile(
    r"\b(vocals?|vocalists?|sing|sings|singing|singers?|sung|choir|choral|rap|raps|rapper|rapping|a ?cappella|acapella|"
    r"lyrics|duet|voices?|crooner|chant|chanting|humming|opera|soprano|tenor|baritone)\b",
    re.I,
)
INSTRUMENTAL_WORDS = re.compile(r"\b(instrumental|no vocals?|without vocals?|no singing|no voice)\b", re.I)


def _fold(text: str) -> str:
    """Lower case, accents off, and letters only: 'T a y l o r  Sw1ft' and 'Beyoncé' still match."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    text = text.translate(str.maketrans("013457$@", "oieastsa"))
    return re.sub(r"[^a-z]+", " ", text).strip()


def _contains_phrase(folded: str, phrase: str) -> bool:
    return re.search(rf"(?:^| ){re.escape(phrase)}(?: |$)", folded) is not None


@functools.cache
def _profanity() -> Profanity:
    words = [
        word
        for word in read_wordlist(get_complete_path_of_file("profanity_wordlist.txt"))
        if any(stem in word.lower() for stem in PROFANITY_STEMS)
    ]
    return Profanity(sorted(set(words) | set(PROFANITY_EXTRA)))


def has_profanity(text: str) -> bool:
    """Whole words only (Scunthorpe, classic, bass pass), in plain, leetspeak or stretched spelling."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    # Stretched letters ("fuuuuck") collapse to at most two, which the list's forms cover.
    squeezed = re.sub(r"(.)\1{2,}", r"\1", plain)
    checker = _profanity()
    return checker.contains_profanity(plain) or checker.contains_profanity(squeezed)


def rule_based(prompt: str, lyrics: str = "") -> dict:
    folded = _fold(f"{prompt}\n{lyrics}")
    squashed = folded.replace(" ", "")
    reasons = []
    for artist in ARTISTS:
        if artist in PUBLIC_DOMAIN:
            continue
        # Spaced-out or run-together names ("t a y l o r swift", "taylorswift") are caught on the squashed text.
        if _contains_phrase(folded, artist) or (len(artist.replace(" ", "")) >= 8 and artist.replace(" ", "") in squashed):
            reasons.append("artist_reference")
            break
    if _COPYRIGHT.search(prompt) or _COPYRIGHT.search(lyrics):
        reasons.append("copyrighted_material")
    if has_profanity(f"{prompt}\n{lyrics}"):
        reasons.append("profanity")
    if any(_contains_phrase(folded, word) for word in EXPLICIT):
        reasons.append("explicit")
    return {"allowed": not reasons, "reasons": reasons}


def moderate(prompt: str, lyrics: str = "") -> dict:
    hook = import_string(settings.ARENA_MODERATION_HOOK)
    result = hook(prompt, lyrics)
    reasons = [str(r) for r in result.get("reasons", [])]
    return {"allowed": bool(result.get("allowed")) and not reasons, "reasons": reasons}


def is_instrumental(prompt: str, lyrics: str = "") -> bool:
    """Routing: lyrics or vocal words make a vocal battle; 'instrumental' / 'no vocals' wins over vocal words."""
    if lyrics.strip():
        return False
    if INSTRUMENTAL_WORDS.search(prompt):
        return True
    return VOCAL_WORDS.search(prompt) is None
