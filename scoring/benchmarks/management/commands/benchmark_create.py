from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from common.errors import ServiceError
from scoring.benchmarks import services


class Command(BaseCommand):
    help = "Freeze a judge benchmark from a study's test split and/or the arena's voted battles, or (--mos) a rating study's rated clips."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--study", help="Study whose test-split pairs (train split for --dev), with their votes, become items.")
        parser.add_argument("--arena", action="store_true", help="Also take the arena's battles with an A or B vote.")
        parser.add_argument("--title", default="")
        parser.add_argument("--bench-version", dest="bench_version", type=int, default=1, help="The version number written into the export.")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--public-share", type=float, default=0.5)
        parser.add_argument("--dev", action="store_true", help="A dev benchmark: its export includes the labels.")
        parser.add_argument("--demo", action="store_true", help="Let the demo's seeded votes be labels; the benchmark is marked demo data everywhere.")
        parser.add_argument("--max-items", type=int)
        parser.add_argument("--rounds", type=int, default=1000, help="Bootstrap rounds for intervals and tests.")
        parser.add_argument("--mos", action="store_true", help="A MOS benchmark: the rated clips of a rating study (--study), scored by SRCC.")

    def handle(self, *args, **opts):
        study = None
        if opts["study"]:
            study = Study.objects.filter(name=opts["study"]).first()
            if study is None:
                raise CommandError(f"No study named {opts['study']!r}.")
        try:
            benchmark = services.benchmark_create(
                name=opts["name"],
                study=study,
                include_arena=opts["arena"],
                title=opts["title"],
                version=opts["bench_version"],
                seed=opts["seed"],
                public_share=opts["public_share"],
                is_dev=opts["dev"],
                demo=opts["demo"],
                max_items=opts["max_items"],
                bootstrap_rounds=opts["rounds"],
                kind="mos" if opts["mos"] else "pairs",
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        private = benchmark.items.filter(is_private=True).count()
        self.stdout.write(f"Benchmark {benchmark.name} v{benchmark.version}: {benchmark.n_items} items ({benchmark.n_items - private} public, {private} private), {len(benchmark.manifest)} clips.")
