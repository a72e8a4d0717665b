from django.core.management.base import BaseCommand

from arena.seed import arena_seed


class Command(BaseCommand):
    help = "Register the built-in demo systems and the prebaked prompt pool (safe to run again)."

    def handle(self, *args, **options):
        result = arena_seed()
        self.stdout.write(
            f"arena: {result['systems']} systems ({result['systems_created']} new), {result['prompts']} prebaked prompts ({result['prompts_created']} new)"
        )
