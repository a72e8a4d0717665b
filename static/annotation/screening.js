// Headphone check: each sound counts as played once the page proves it received it. When a player starts
// loading its sound (the person pressed play), the page fetches the same URL once and answers that
// response's Audio-Proof header (static/js/audio-proof.js); the receipt goes with the answers.
(function () {
  "use strict";
  const form = document.getElementById("screening-form");
  if (!form || !window.AuditoriumProof) return;
  form.querySelectorAll("audio[data-trial]").forEach((audio) => {
    const trial = audio.dataset.trial;
    const field = document.getElementById("receipt-" + trial);
    let asked = false;
    async function prove() {
      if (asked || !field) return;
      asked = true;
      try {
        const response = await fetch(audio.getAttribute("src"), { credentials: "same-origin" });
        if (!response.ok) throw new Error("HTTP " + response.status);
        const receipt = window.AuditoriumProof.receipt(response, await response.arrayBuffer(), trial);
        if (receipt) field.value = JSON.stringify(receipt);
      } catch (err) {
        asked = false; // the next play tries again
      }
    }
    audio.addEventListener("loadstart", prove);
    audio.addEventListener("play", prove);
  });
})();
