"""Template context shared by every page: which navigation a user's roles allow, and where they are."""

from common.roles import is_researcher

# The nav entry each page belongs to, by URL name, so one navigation (base.html) marks the
# current page on every page, arena included.
_SECTIONS = (
    ("arena:leaderboard", "leaderboard"),
    ("benchmarks:", "benchmarks"),
    ("arena:", "arena"),
    # Reward training starts from the judges page and its result is a judge: it belongs there.
    ("scoring:judge", "judges"),
    ("scoring:reward", "judges"),
    ("scoring:training", "judges"),
    ("scoring:run", "runs"),
    # Named, not "scoring:": a new scoring page must pick its entry instead of passing for a report.
    ("scoring:report", "reports"),
    ("scoring:study-report", "reports"),
    ("study-manage", "manage"),
    ("study-", "manage"),
    ("pairs-import", "manage"),
    ("home", "home"),
)


def _section(request) -> str:
    match = getattr(request, "resolver_match", None)
    name = (match.view_name if match else "") or ""
    return next((section for prefix, section in _SECTIONS if name.startswith(prefix)), "")


def _benchmark_teams(user):
    """The user's judge benchmark teams, looked up only when a template asks (the nav for non-researchers, the home
    page) and then once per request: pages that never read it, and the API, pay no query."""
    found: list = []

    def teams() -> list:
        if not found:
            found.append(list(user.benchmark_teams.select_related("benchmark").order_by("name")) if user is not None and user.is_authenticated else [])
        return found[0]

    return teams


def _participant_study(user):
    """The study of a participant who came from a recruitment link (their top bar shows only it), looked up once when asked."""
    found: list = []

    def study():
        if not found:
            participant = None
            if user is not None and user.is_authenticated:
                from .crowd_models import ExternalParticipant

                participant = ExternalParticipant.objects.filter(user=user).select_related("study").first()
            found.append(participant.study if participant is not None else None)
        return found[0]

    return study


def roles(request):
    user = getattr(request, "user", None)
    profile = getattr(user, "annotator_profile", None) if user is not None and user.is_authenticated else None
    return {
        "is_researcher": bool(user is not None and is_researcher(user)),
        # Team members who are not researchers reach the benchmarks through this (nav link, home page list).
        "benchmark_teams": _benchmark_teams(user),
        # Withdrawing means something only once consent was given (and not already withdrawn).
        "can_withdraw_consent": bool(profile is not None and profile.has_consented),
        "nav_section": _section(request),
        # A recruited participant's top bar: the study and withdrawal, nothing that leads away from the task.
        "participant_study": _participant_study(user),
    }
