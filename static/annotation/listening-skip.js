/* The listening page's skip dialog: a reason is required (a preset, free text or both); the pair goes
 * to another annotator. AuditoriumListen.skipDialog({...}) wires the dialog's form and gives open(prefill)
 * to static/annotation/listening.js; `url` holds "{id}" for the assignment, current() is the pair shown.
 */
(() => {
  "use strict";

  function skipDialog({ el, url, current, postJSON, store, flash, announce, loadNext }) {
    function openSkip(prefill) {
      const task = current();
      if (!task) return;
      el.skipError.hidden = true;
      el.skipReason.value = prefill || "";
      for (const input of el.skipForm.querySelectorAll("input[name=skip_preset]")) input.checked = false;
      if (task.transport) task.transport.pause();
      el.skipDialog.showModal();
      el.skipReason.focus();
    }

    async function doSkip() {
      const preset = el.skipForm.querySelector("input[name=skip_preset]:checked");
      const reason = [preset ? preset.value : "", el.skipReason.value.trim()].filter(Boolean).join(" ");
      if (!reason) {
        el.skipError.textContent = "Say why you skip this pair: pick a reason or write one.";
        el.skipError.hidden = false;
        return;
      }
      const mine = current();
      let res;
      try {
        res = await postJSON(url.replace("{id}", String(mine.assignment.id)), { reason });
      } catch (_) {
        el.skipError.textContent = "The server could not be reached; try again.";
        el.skipError.hidden = false;
        return;
      }
      if (!res.ok) {
        el.skipError.textContent = (res.data && res.data.detail) || `Skipping failed (HTTP ${res.status}).`;
        el.skipError.hidden = false;
        return;
      }
      el.skipDialog.close();
      store.clear(mine.assignment.id);
      flash(`Pair skipped (${reason.replace(/\.$/, "")}). It goes to another annotator; your progress is unchanged.`);
      announce("Pair skipped.");
      loadNext();
    }

    el.skipForm.addEventListener("submit", (event) => {
      if (event.submitter && event.submitter.value === "skip") {
        event.preventDefault();
        doSkip();
      }
    });

    return { open: openSkip };
  }

  window.AuditoriumListen = Object.assign(window.AuditoriumListen || {}, { skipDialog });
})();
