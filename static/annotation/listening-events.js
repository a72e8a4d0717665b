/* The listening page's report of what the transport does (play, pause, seek, switch, a tick a second
 * while playing, ended): numbered events, each with the page's clock, kept until the judgment and sent in
 * its body with the clips' receipts (batch); the server places them by its own clock at the judgment's
 * arrival and decides from its record whether the clips were heard long enough (docs/listening.md).
 * A page that goes away, or one whose queue grows past FLUSH_AT, posts them to the listening API instead.
 *
 * AuditoriumListen.listeningEvents({url, postJSON, request, isCurrent, render}) gives record, prove
 * (a clip's receipt: static/js/audio-proof.js), batch, settle, flushEvents and flushOnLeave for
 * static/annotation/listening.js; `url` holds "{id}" for the assignment; postJSON and request are static/js/http.js's.
 */
(() => {
  "use strict";

  // The server takes up to 1000 events with a judgment or a clocked post (common/listening.py); a queue this long
  // (minutes of ticks) leaves in a post of its own so the judgment's batch stays under that.
  const FLUSH_AT = 900;
  // The page's clock as a batch leaves: never before the rounded time of an event recorded just now.
  const clientNow = () => Math.ceil(performance.now());

  function listeningEvents({ url, postJSON, request, isCurrent, render }) {
    function record(mine, kind, side, position) {
      mine.saved.seq += 1;
      mine.events.push({
        seq: mine.saved.seq,
        side,
        kind,
        position: Math.round(Math.max(0, position) * 1000) / 1000,
        client_time: Math.round(performance.now()),
      });
      if (kind === "tick") mine.lastTick = performance.now();
      if (mine.events.length >= FLUSH_AT) flushEvents(mine);
    }

    // A clip's receipt rides with the judgment (or a post the queue forced), so proving costs no request of its own.
    function prove(mine, receipt) {
      (mine.receipts = mine.receipts || []).push(receipt);
    }

    // What rides with the judgment: every event and receipt not yet accepted, and the clock they are measured on.
    function batch(mine) {
      const body = { events: mine.events.slice(0, 1000), client_now: clientNow() };
      if (pendingReceipts(mine)) body.receipts = mine.receipts.slice(0, 8);
      return body;
    }

    // The judgment's answer decides what the page keeps: stored (or already stored) drops the batch; a refused
    // receipt will not come right by sending it again, so it goes, and the events stay for the next try. True when
    // the events were numbered below what the server already had (another tab on this pair): renumbered after it,
    // they are worth sending again at once.
    function settle(mine, res) {
      const code = (res.data && res.data.code) || "";
      if (res.status === 200 || res.status === 201 || code === "already_submitted") {
        mine.events = [];
        mine.receipts = [];
        return false;
      }
      if (res.status === 400 && code.indexOf("receipt") !== -1) mine.receipts = [];
      // Events the server cannot place (a clock that jumped back) would refuse every try: listening again is the way on.
      if (res.status === 400 && code === "bad_events") mine.events = [];
      if (res.data && res.data.heard) mine.server = res.data.heard;
      const next = Number((res.data && res.data.next_seq) || 0);
      if (code !== "listening_too_short" || !mine.events.length || mine.events[0].seq >= next) return false;
      mine.events.forEach((event, index) => {
        event.seq = next + index;
      });
      mine.saved.seq = mine.events[mine.events.length - 1].seq;
      return true;
    }

    function listeningUrl(mine) {
      return url.replace("{id}", String(mine.assignment.id));
    }

    const pendingReceipts = (mine) => (mine.receipts && mine.receipts.length ? mine.receipts : null);

    // One post at a time, in order: the server ignores numbers it has already seen, so a batch
    // that may have arrived (lost answer) is safe to send again, and an older batch never overtakes.
    function flushEvents(mine) {
      if (!mine || mine.flushing) return mine ? mine.flushing : Promise.resolve();
      if (!mine.events.length && !pendingReceipts(mine)) return Promise.resolve();
      mine.flushing = (async () => {
        while (mine.events.length || pendingReceipts(mine)) {
          const chunk = mine.events.slice(0, 1000);
          const receipts = pendingReceipts(mine) ? mine.receipts.slice(0, 8) : null;
          mine.lastFlush = performance.now();
          let res;
          try {
            const body = { events: chunk, client_now: clientNow() };
            if (receipts) body.receipts = receipts;
            res = await postJSON(listeningUrl(mine), body);
          } catch (_) {
            break; // offline: kept, sent with the next flush
          }
          if (res.status >= 500 || res.status === 429) break;
          if (receipts) {
            mine.receipts.splice(0, receipts.length);
            // A refused receipt refuses the whole post: the events go again on their own; the submit repeats the reason.
            const code = (res.data && res.data.code) || "";
            if (res.status === 400 && code.indexOf("receipt") !== -1) continue;
          }
          mine.events.splice(0, chunk.length);
          if (res.ok && res.data) {
            mine.server = res.data.heard || mine.server;
            if (res.data.last_seq > mine.saved.seq) mine.saved.seq = res.data.last_seq;
            // Numbers the server already had from elsewhere (another tab on this pair): send those
            // events again under fresh numbers. Play/pause/switch repeated change nothing on the server.
            const skipped = chunk.slice(0, res.data.ignored || 0).filter((event) => event.seq > mine.acked);
            if (skipped.length) {
              mine.events.unshift(...skipped.map((event) => ({ ...event })));
              for (const event of mine.events) {
                mine.saved.seq += 1;
                event.seq = mine.saved.seq;
              }
            }
            mine.acked = Math.max(mine.acked, res.data.last_seq);
          }
        }
        mine.flushing = null;
        if (isCurrent(mine)) render();
      })();
      return mine.flushing;
    }

    function flushOnLeave(task) {
      if (!task || (!task.events.length && !pendingReceipts(task))) return;
      // keepalive: the post outlives the page (its body at most 64 KiB: the newest 600 events). If it fails, the
      // page is going away; the server's record simply ends earlier.
      const body = { events: task.events.slice(-600), client_now: clientNow() };
      if (pendingReceipts(task)) body.receipts = task.receipts.slice(0, 8);
      if (!body.events.length) delete body.events;
      request(listeningUrl(task), { method: "POST", body, keepalive: true }).catch(() => {});
    }

    return { record, prove, batch, settle, flushEvents, flushOnLeave };
  }

  window.AuditoriumListen = Object.assign(window.AuditoriumListen || {}, { listeningEvents });
})();
