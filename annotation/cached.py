"""What every request of the listening page reads and rarely changes, from the cache.

Study settings (by name) and an annotator's consent are read on every next-pair request
(a submit reads the study's rules in its own locking query); they change only when a
researcher edits a study or an annotator gives or withdraws consent. Entries are dropped
on every save or delete of those rows (signals wired in apps.py), so a change is seen by
the next request; the timeout only bounds what a write that bypasses the signals (a
queryset update) could leave behind.
"""

from __future__ import annotations

from common.cache import cache_forget, cache_get, cache_get_many, cache_set_many

from .models import AnnotatorProfile, Study

TIMEOUT = 300


def _name_key(name: str) -> str:
    return f"annotation:study-name:{name}"


def _consent_key(user_id: int) -> str:
    return f"annotation:consent:{user_id}"


def study_by_name(name: str) -> Study | None:
    # The study itself under its name: one cache round trip per request, not two.
    study = cache_get(_name_key(name))
    if study is None or study.name != name:
        study = Study.objects.filter(name=name).first()
        if study is None:
            return None
        cache_set_many({_name_key(name): study}, TIMEOUT)
    return study


def study_and_consent(name: str, user_id: int) -> tuple[Study | None, bool]:
    """study_by_name and has_consented in one cache round trip (the next-pair request needs both)."""
    found = cache_get_many(_name_key(name), _consent_key(user_id))
    study = found.get(_name_key(name))
    if study is None or study.name != name:
        study = study_by_name(name)
    consented = found.get(_consent_key(user_id))
    return study, has_consented(user_id) if consented is None else consented


def has_consented(user_id: int) -> bool:
    value = cache_get(_consent_key(user_id))
    if value is None:
        profile = AnnotatorProfile.objects.filter(user_id=user_id).only("consented_at", "withdrawn_at").first()
        value = profile is not None and profile.has_consented
        cache_set_many({_consent_key(user_id): value}, TIMEOUT)
    return value


# How many pairs an annotator could reach in a study (judged + open to them), as last counted.
# Counting is a scan of the study's pairs: the next-pair request reuses the count for this long
# instead of paying it on every pair; the home page counts afresh and refreshes it.
REACHABLE_TIMEOUT = 60


def _reachable_key(study_id: int, user_id: int) -> str:
    return f"annotation:reachable:{study_id}:{user_id}"


def reachable_get(study_id: int, user_id: int) -> int | None:
    return cache_get(_reachable_key(study_id, user_id))


def reachable_set(study_id: int, user_id: int, reachable: int) -> None:
    cache_set_many({_reachable_key(study_id, user_id): reachable}, REACHABLE_TIMEOUT)


def study_forget(sender=None, instance=None, **kwargs) -> None:
    cache_forget(_name_key(instance.name))


def study_rename_forget(sender=None, instance=None, **kwargs) -> None:
    """Before a study is saved: a rename leaves its old name's entry behind, holding the study as it was."""
    if instance.pk is None:
        return
    old = Study.objects.filter(pk=instance.pk).values_list("name", flat=True).first()
    if old is not None and old != instance.name:
        cache_forget(_name_key(old))


def consent_forget(sender=None, instance=None, **kwargs) -> None:
    cache_forget(_consent_key(instance.user_id))
