"""A Prolific API on 127.0.0.1 that follows the documented endpoints and answers (docs.prolific.com/api-reference):

- GET  /api/v1/studies/{id}/submissions/        {"results": [{id, participant_id, status, ...}], "_links": {"next": {"href"}}, "meta"}
- GET  /api/v1/submissions/{id}/                 {id, participant, status, study_id, bonus_payments: [cents, ...]}
- POST /api/v1/submissions/{id}/transition/      {"action": "APPROVE"} or {"action": "REJECT", "message" (>= 100 chars), "rejection_category"}
                                                 idempotent: the same transition twice is ignored
- POST /api/v1/submissions/bonus-payments/       {"study_id", "csv_bonuses": "<participant or submission id>,<amount>\\n..."} -> {"id", "amount", ...}
- POST /api/v1/bulk-bonus-payments/{id}/pay/     202 and a sentence; NOT idempotent, as documented: every call pays the bulk again

Every request needs `Authorization: Token <token>`. `ledger` records each bonus paid (participant id, cents); `calls`
each request (method, path, headers, body). `faults` is a list of (predicate(method, path), action) used once each,
first match first: "timeout_after" (act, then answer too late), "timeout_before" (answer too late, acting not at all),
"slow" (wait slow_s, then act and answer, in time), or an HTTP status to answer instead of acting.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CATEGORIES = {"TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK", "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER"}


def _oid() -> str:
    return secrets.token_hex(12)


class FakeProlific:
    def __init__(self, *, token: str, late_s: float = 1.0, page_size: int = 0):
        self.token, self.late_s, self.page_size = token, late_s, page_size
        self.slow_s = 0.2
        self.studies: dict[str, list[str]] = {}
        self.submissions: dict[str, dict] = {}
        self.bulks: dict[str, dict] = {}
        self.ledger: list[tuple[str, int]] = []
        self.calls: list[dict] = []
        self.faults: list[tuple] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _handle(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with outer._lock:
                    outer.calls.append({"method": method, "path": self.path, "headers": dict(self.headers), "body": body})
                    fault = next((f for f in outer.faults if f[0](method, self.path)), None)
                    if fault is not None:
                        outer.faults.remove(fault)
                action = fault[1] if fault else None
                if isinstance(action, int):
                    status, answer = action, {"error": {"detail": "injected failure"}}
                elif action == "timeout_before":
                    time.sleep(outer.late_s)
                    status, answer = 504, {"error": {"detail": "too late"}}
                else:
                    if action == "slow":
                        time.sleep(outer.slow_s)
                    with outer._lock:
                        status, answer = outer.route(method, self.path, body, self.headers.get("Authorization", ""))
                    if action == "timeout_after":
                        time.sleep(outer.late_s)
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # --- Data -------------------------------------------------------------------------------------------
    def add_study(self, study_id: str, participants: dict[str, str]) -> dict[str, str]:
        """participant id -> status; returns participant id -> submission id."""
        made = {}
        for pid, status in participants.items():
            sid = _oid()
            self.submissions[sid] = {"id": sid, "participant_id": pid, "status": status, "study_id": study_id, "started_at": "2026-12-07T10:00:00Z", "bonus_payments": []}
            self.studies.setdefault(study_id, []).append(sid)
            made[pid] = sid
        return made

    def paid(self, pid: str) -> list[int]:
        return [cents for who, cents in self.ledger if who == pid]

    # --- Routes -----------------------------------------------------------------------------------------
    def route(self, method: str, path: str, body, auth: str):
        if auth != f"Token {self.token}":
            return 401, {"error": {"status": 401, "detail": "Invalid token."}}
        path, _, query = path.partition("?")
        if method == "GET" and (m := re.fullmatch(r"/api/v1/studies/(\w+)/submissions/", path)):
            ids = self.studies.get(m[1])
            if ids is None:
                return 404, {"error": {"detail": "Not found."}}
            page = int(dict(p.split("=") for p in query.split("&") if "=" in p).get("page", 1))
            size = self.page_size or len(ids) or 1
            part = ids[(page - 1) * size : page * size]
            following = f"{self.base_url}studies/{m[1]}/submissions/?page={page + 1}" if page * size < len(ids) else None
            results = [{k: v for k, v in self.submissions[s].items() if k != "bonus_payments"} for s in part]
            return 200, {"results": results, "_links": {"next": {"href": following}}, "meta": {"count": len(ids)}}
        if method == "GET" and (m := re.fullmatch(r"/api/v1/submissions/(\w+)/", path)):
            sub = self.submissions.get(m[1])
            if sub is None:
                return 404, {"error": {"detail": "Not found."}}
            return 200, {**{k: v for k, v in sub.items() if k != "participant_id"}, "participant": sub["participant_id"]}
        if method == "POST" and (m := re.fullmatch(r"/api/v1/submissions/(\w+)/transition/", path)):
            return self._transition(m[1], body or {})
        if method == "POST" and path == "/api/v1/submissions/bonus-payments/":
            return self._setup(body or {})
        if method == "POST" and (m := re.fullmatch(r"/api/v1/bulk-bonus-payments/(\w+)/pay/", path)):
            bulk = self.bulks.get(m[1])
            if bulk is None:
                return 404, {"error": {"detail": "Not found."}}
            for sid, pid, cents in bulk["rows"]:
                self.ledger.append((pid, cents))
                self.submissions[sid]["bonus_payments"].append(cents)
            return 202, f"Bulk bonus payment with ID {m[1]} is being processed asynchronously. Payments will be completed shortly."
        return 404, {"error": {"detail": f"no route {method} {path}"}}

    def _transition(self, sid: str, body: dict):
        sub = self.submissions.get(sid)
        if sub is None:
            return 404, {"error": {"detail": "Not found."}}
        action = body.get("action")
        target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action)
        if target is None:
            return 400, {"error": {"detail": {"action": ["Not a valid choice."]}}}
        if action == "REJECT":
            if body.get("rejection_category") not in CATEGORIES:
                return 400, {"error": {"detail": {"rejection_category": ["Not a valid choice."]}}}
            if len(body.get("message") or "") < 100:
                return 400, {"error": {"detail": {"message": ["Ensure this field has at least 100 characters."]}}}
        if sub["status"] == target:
            return 200, sub  # the same request twice is ignored
        if sub["status"] != "AWAITING REVIEW":
            return 400, {"error": {"detail": f"Cannot transition a submission in status {sub['status']}."}}
        sub["status"] = target
        return 200, {k: v for k, v in sub.items() if k != "bonus_payments"}

    def _setup(self, body: dict):
        study_id = body.get("study_id")
        rows, bad = [], []
        for line in str(body.get("csv_bonuses") or "").strip().splitlines():
            target, _, amount = line.partition(",")
            sub = self.submissions.get(target) or next((s for s in self.submissions.values() if s["participant_id"] == target and s["study_id"] == study_id), None)
            if sub is None or sub["study_id"] != study_id:
                bad.append(target)
                continue
            rows.append((sub["id"], sub["participant_id"], int(Decimal(amount) * 100)))
        if bad or not rows:
            return 400, {"error": {"detail": f"These ids did not take part in the study: {', '.join(bad)}" if bad else "No bonuses given."}}
        bulk_id = _oid()
        self.bulks[bulk_id] = {"study": study_id, "rows": rows}
        amount = sum(r[2] for r in rows) / 100
        return 201, {"id": bulk_id, "study": study_id, "amount": amount, "fees": round(amount / 3, 2), "total_amount": round(amount * 4 / 3, 2), "vat": 0}
