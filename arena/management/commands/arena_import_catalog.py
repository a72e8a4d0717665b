from django.core.management.base import BaseCommand, CommandError

from arena.catalog import catalog_import_folder, catalog_import_jsonl
from common.errors import ServiceError


class Command(BaseCommand):
    help = "Import pre-generated clips for catalog systems from a folder (ROOT/prompts.json + ROOT/<system>/<stem>.wav) or a CMI JSONL."

    def add_arguments(self, parser):
        parser.add_argument("source", help="a folder, or a .jsonl file in the CMI-RewardBench format")
        parser.add_argument("--root", help="for JSONL: folder the audio paths are relative to (default: the file's folder)")
        parser.add_argument("--no-pool", action="store_true", help="do not add the prompts to the prebaked pool")

    def handle(self, *args, **opts):
        from pathlib import Path

        source = Path(opts["source"])
        try:
            if source.is_dir():
                result = catalog_import_folder(root=source, add_to_pool=not opts["no_pool"])
            elif source.is_file():
                result = catalog_import_jsonl(path=source, root=opts["root"], add_to_pool=not opts["no_pool"])
            else:
                raise CommandError(f"{source} is neither a folder nor a file")
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"{result['added']} catalog clips imported")
        for line in result["skipped"]:
            self.stderr.write(f"skipped {line}")
