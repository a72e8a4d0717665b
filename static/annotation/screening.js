// Headphone check: each sound counts as played once the page proves it received it. When a player starts
// loading its sound (the person pressed play), the page fetches the same URL once and answers that
// response's Audio-Proof header (static/js/audio-proof.js); the receipt goes with the answers. A fetch
// that fails is tried again, and a submit waits for the receipts of the sounds that were started.
(function () {
  "use strict";
  const form = document.getElementById("screening-form");
  if (!form || !window.AuditoriumProof) return;
  const pending = new Map(); // trial -> the promise of its receipt, once its player started loading

  function proveOnce(audio, field, trial) {
    if (field.value) return Promise.resolve(true);
    if (pending.has(trial)) return pending.get(trial);
    const attempt = (async () => {
      for (let n = 0; n < 4; n += 1) {
        try {
          const response = await fetch(audio.getAttribute("src"), { credentials: "same-origin" });
          if (response.ok) {
            const receipt = window.AuditoriumProof.receipt(response, await response.arrayBuffer(), trial);
            if (receipt) {
              field.value = JSON.stringify(receipt);
              field.dataset.proven = "1";
              return true;
            }
          }
        } catch (err) {
          // a dropped connection: try again below
        }
        await new Promise((resolve) => setTimeout(resolve, 500 * (n + 1)));
      }
      pending.delete(trial); // the next play starts over
      return false;
    })();
    pending.set(trial, attempt);
    return attempt;
  }

  const players = [...form.querySelectorAll("audio[data-trial]")].map((audio) => {
    const trial = audio.dataset.trial;
    const field = document.getElementById("receipt-" + trial);
    const prove = () => (field ? proveOnce(audio, field, trial) : Promise.resolve(false));
    audio.addEventListener("loadstart", prove);
    audio.addEventListener("play", prove);
    // A player started before this script ran (a press while the page was still loading) sent no event to hear.
    if (audio.readyState > 0 || !audio.paused) prove();
    return { audio, field, trial, prove };
  });

  let submitting = false;
  form.addEventListener("submit", (event) => {
    if (submitting) return;
    const waiting = players.filter((p) => p.field && !p.field.value && pending.has(p.trial));
    if (!waiting.length) return;
    event.preventDefault();
    Promise.all(waiting.map((p) => p.prove())).then(() => {
      submitting = true;
      form.requestSubmit ? form.requestSubmit() : form.submit();
    });
  });
})();
