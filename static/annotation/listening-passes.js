/* Separate screens on the listening page: a study that asks instruction following and musicality one after the
 * other sends `passes` with each pair ({order, answered, current}); the page then shows only the current question,
 * sends it alone to the answer endpoint with the listening so far, and after the first answer shows the second
 * question on the same pair, the same clips and the same listening (annotation/services/passes.py).
 * A study that asks both on one screen sends no `passes`: every function here then leaves the page as it was.
 *
 * AuditoriumListen.dimensionPasses({$, el}) gives asks, last, show, body, advance and submitText for
 * static/annotation/listening.js and listening-view.js.
 */
(() => {
  "use strict";

  const TITLES = { alignment: "Instruction following", musicality: "Musicality" };

  function dimensionPasses({ $, el }) {
    const info = (task) => (task && task.assignment && task.assignment.passes) || null;

    // Whether the screen now shown asks `question`.
    function asks(task, question) {
      const p = info(task);
      return !p || p.current === question;
    }

    // Whether this screen's answer completes the judgment (always, on one screen).
    function last(task) {
      const p = info(task);
      return !p || p.answered.length + 1 >= p.order.length;
    }

    function show(task) {
      const p = info(task);
      for (const q of ["alignment", "musicality"]) $(`q-${q}`).hidden = !asks(task, q);
      // The keys legend lists only the keys this screen answers to.
      for (const row of document.querySelectorAll("[data-shortcut-question]")) row.hidden = !asks(task, row.dataset.shortcutQuestion);
      el.questions.classList.toggle("one", Boolean(p));
      el.rationaleBlock.hidden = !last(task);
      el.passStep.hidden = !p;
      if (p) {
        const n = p.answered.length + 1;
        el.passStep.textContent = `Question ${n} of ${p.order.length}: ${TITLES[p.current].toLowerCase()}. ${
          n === 1 ? "The next question comes on its own screen, for the same pair." : "Your first answer is saved; answer this one on its own."
        }`;
      }
      return p ? p.current : "alignment";
    }

    // The answer endpoint's body for this screen, from the judgment body the page would send on one screen. Each
    // screen's key is the pair's key with its dimension: a retry after a reload sends the same one.
    function body(task, full) {
      const p = info(task);
      const dimension = p.current;
      return {
        idempotency_key: `${full.idempotency_key}-${dimension}`,
        dimension,
        choice: full[dimension],
        confidence: full[`${dimension}_confidence`],
        rationale: last(task) ? full.rationale : "",
        listening_log: full.listening_log,
        time_on_page_ms: full.time_on_page_ms,
        listening: full.listening,
      };
    }

    // The first answer stored: the next screen asks the next dimension.
    function advance(task, answer) {
      const p = info(task);
      p.answered = answer.answered || [p.current];
      p.current = answer.next_dimension;
      return p.current;
    }

    function submitText(task) {
      return last(task) ? "Submit" : "Save and go on";
    }

    return { asks, last, show, body, advance, submitText, title: (q) => TITLES[q], active: (task) => info(task) !== null };
  }

  window.AuditoriumListen = Object.assign(window.AuditoriumListen || {}, { dimensionPasses });
})();
