"""Template context shared by every page: which navigation a user's roles allow."""

from auditorium.roles import is_researcher


def roles(request):
    user = getattr(request, "user", None)
    return {"is_researcher": bool(user is not None and is_researcher(user))}
