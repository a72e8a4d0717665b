/* The listening page's report of what the transport does (play, pause, seek, switch, a tick a second
 * while playing, ended): numbered events posted to the listening API (annotation/api.py), which stamps
 * each post on arrival and decides from its own record whether the clips were heard long enough.
 *
 * AuditoriumListen.listeningEvents({url, postJSON, request, isCurrent, render}) gives record, prove
 * (a clip's receipt: static/js/audio-proof.js), flushEvents and flushOnLeave for static/annotation/listening.js; `url` holds "{id}" for the assignment;
 * postJSON and request are static/js/http.js's.
 */
(() => {
  "use strict";

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
      if (kind === "tick") {
        mine.lastTick = performance.now();
      } else if (!mine.flushQueued) {
        // Events recorded by one action (pause + switch, ended + pause) leave in one post, after the action.
        mine.flushQueued = true;
        queueMicrotask(() => {
          mine.flushQueued = false;
          flushEvents(mine);
        });
      }
    }

    // A clip's receipt rides with the next events post (the first press of Play), so proving costs no request of its
    // own; the submit's flush sends one still waiting.
    function prove(mine, receipt) {
      (mine.receipts = mine.receipts || []).push(receipt);
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
          const batch = mine.events.slice(0, 50);
          const receipts = pendingReceipts(mine) ? mine.receipts.slice(0, 8) : null;
          mine.lastFlush = performance.now();
          let res;
          try {
            res = await postJSON(listeningUrl(mine), receipts ? { events: batch, receipts } : { events: batch });
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
          mine.events.splice(0, batch.length);
          if (res.ok && res.data) {
            mine.server = res.data.heard || mine.server;
            if (res.data.last_seq > mine.saved.seq) mine.saved.seq = res.data.last_seq;
            // Numbers the server already had from elsewhere (another tab on this pair): send those
            // events again under fresh numbers. Play/pause/switch repeated change nothing on the server.
            const skipped = batch.slice(0, res.data.ignored || 0).filter((event) => event.seq > mine.acked);
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
      if (!task || !task.events.length) return;
      // keepalive: the post outlives the page. If it fails, the page is going away; the server's record simply ends earlier.
      request(listeningUrl(task), { method: "POST", body: { events: task.events.slice(0, 50) }, keepalive: true }).catch(() => {});
    }


    return { record, prove, flushEvents, flushOnLeave };
  }

  window.AuditoriumListen = Object.assign(window.AuditoriumListen || {}, { listeningEvents });
})();
