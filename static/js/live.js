/* The one websocket client of the live pages (leaderboard, scoring run, training, study report): one
 * reconnect policy and one polling fallback, so every page behaves the same when its socket is down.
 *
 *   const live = AuditoriumLive.connect("/ws/...", {
 *     onMessage(message) {},            // each push, parsed from JSON
 *     onStatus(state) {},               // see below
 *     poll: { url, everyMs, onData },   // optional: GET url (JSON) every everyMs while the socket is down
 *   });
 *   live.live     // whether the socket is open now
 *   live.close()  // stop everything
 *
 * States: "connecting" (first attempt), "live", "polling" (socket down, the page polls), "unreachable"
 * (socket down and the last poll failed), "reconnecting" (socket down, nothing to poll), "refused" (the
 * server closed with a 44xx code: not allowed or not found; no reconnect, polling goes on).
 *
 * Poll options besides url/everyMs/onData: run() instead of url, for a page that fetches something other
 * than JSON (a promise; it handles its own errors); quietMs, to poll also while the socket is open but has
 * been silent that long; active(), to poll only while it returns true; catchUp, to poll once each time the
 * socket opens (what was pushed while it was down).
 *
 * Reconnects back off from 1 s to 30 s. The delay starts over only once a connection has stayed up for
 * 10 s: a socket that opens and drops at once (a proxy that cuts websockets) is not retried every second.
 */
(function () {
  "use strict";
  const FIRST_RETRY_MS = 1000;
  const MAX_RETRY_MS = 30000;
  const STABLE_MS = 10000;

  function socketUrl(path) {
    return (window.location.protocol === "https:" ? "wss://" : "ws://") + window.location.host + path;
  }

  function fetchJSON(url) {
    return fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" }).then((response) => {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.json();
    });
  }

  function connect(path, options) {
    const opts = options || {};
    const poll = opts.poll && (opts.poll.url || opts.poll.run) ? opts.poll : null;
    let socket = null;
    let open = false;
    let closed = false;
    let refused = false;
    let retry = FIRST_RETRY_MS;
    let openedAt = 0;
    let lastMessage = 0;
    let retryTimer = null;
    let pollTimer = null;
    let polling = false;
    let state = "";

    function setState(next) {
      if (next === state || closed) return;
      state = next;
      if (opts.onStatus) opts.onStatus(next);
    }

    function pollWanted() {
      if (closed || (poll.active && !poll.active())) return false;
      if (!open) return true;
      return Boolean(poll.quietMs) && Date.now() - lastMessage >= poll.quietMs;
    }

    function pollNow() {
      if (!poll || polling || closed) return;
      polling = true;
      const done = poll.run ? Promise.resolve(poll.run()) : fetchJSON(poll.url).then((data) => poll.onData && poll.onData(data));
      done
        .then(
          () => {
            if (!open && !refused) setState("polling");
          },
          () => {
            // Keep what the page shows; the badge says it may be out of date.
            if (!open && !refused) setState("unreachable");
          }
        )
        .finally(() => {
          polling = false;
        });
    }

    function pollLoop() {
      if (closed) return;
      if (pollWanted()) pollNow();
      pollTimer = setTimeout(pollLoop, poll.everyMs);
    }

    function down() {
      const wasUp = state !== "polling" && state !== "unreachable" && state !== "reconnecting";
      setState(poll ? (state === "unreachable" ? state : "polling") : "reconnecting");
      // Whatever was pushed while the socket went down is fetched at once, not a whole interval later.
      if (wasUp && poll && (!poll.active || poll.active())) pollNow();
    }

    function attempt() {
      retryTimer = null;
      if (closed) return;
      let ws = null;
      try {
        ws = "WebSocket" in window ? new WebSocket(socketUrl(path)) : null;
      } catch (err) {
        ws = null;
      }
      if (!ws) {
        // No websockets here at all: the page lives on polling alone.
        down();
        return;
      }
      socket = ws;
      ws.onopen = () => {
        open = true;
        openedAt = lastMessage = Date.now();
        setState("live");
        if (poll && poll.catchUp) pollNow();
      };
      ws.onmessage = (event) => {
        lastMessage = Date.now();
        let message;
        try {
          message = JSON.parse(event.data);
        } catch (err) {
          return;
        }
        if (opts.onMessage) opts.onMessage(message);
      };
      ws.onclose = (event) => {
        const wasOpen = open;
        socket = null;
        open = false;
        if (closed) return;
        if (wasOpen && Date.now() - openedAt >= STABLE_MS) retry = FIRST_RETRY_MS;
        if (event.code >= 4400 && event.code < 4500) {
          refused = true;
          setState("refused");
          return;
        }
        // A plain WSGI server, a proxy without websockets or a restart: retry, later each time.
        down();
        retryTimer = setTimeout(attempt, retry);
        retry = Math.min(retry * 2, MAX_RETRY_MS);
      };
    }

    setState("connecting");
    attempt();
    if (poll) pollTimer = setTimeout(pollLoop, poll.everyMs);

    return {
      get live() {
        return open;
      },
      close() {
        closed = true;
        clearTimeout(retryTimer);
        clearTimeout(pollTimer);
        if (socket) socket.close();
      },
    };
  }

  window.AuditoriumLive = { connect: connect };
})();
