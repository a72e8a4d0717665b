"""cProfile of report_compute on bench/report.py's synthetic votes: .venv/bin/python bench/profile_report.py 20000"""
import os, sys, tempfile, time, cProfile, pstats
from pathlib import Path
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform"), str(ROOT / "bench")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditorium.settings")
os.environ.setdefault("DJANGO_DEBUG", "true")
os.environ.setdefault("SQLITE_PATH", str(Path(tempfile.mkdtemp()) / "bench.sqlite3"))
os.environ.setdefault("LOG_LEVEL", "WARNING")
import django; django.setup()
from scoring import agreement, report
import importlib.util
spec = importlib.util.spec_from_file_location("benchreport", ROOT / "bench/report.py"); br = importlib.util.module_from_spec(spec); spec.loader.exec_module(br)
n = int(sys.argv[1])
raw, pairs, verdicts, sources = br.synthetic(n)
votes = agreement.votes_frame_prepare(raw)
options = report.ReportOptions(rounds=1000)
f = lambda: report.report_compute(votes=votes, verdicts=verdicts, pairs=pairs, sources=sources, options=options)
pr = cProfile.Profile(); c0=time.process_time(); pr.runcall(f); print("cpu", time.process_time()-c0)
st = pstats.Stats(pr); st.sort_stats("cumulative").print_stats(35)
