from django.core.management.base import BaseCommand

from arena.models import ArenaSystem
from arena.services import system_health_check


class Command(BaseCommand):
    help = "Health-check every active arena system; unhealthy ones leave the sampling pool until a check passes."

    def handle(self, *args, **opts):
        for system in ArenaSystem.objects.select_related("system").filter(is_active=True):
            ok = system_health_check(arena_system=system)
            self.stdout.write(f"{'ok  ' if ok else 'FAIL'} {system.name}: {system.health_detail}")
