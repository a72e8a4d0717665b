/* The listening page's keyboard: Enter confirms the instruction, then submits; Q/W and E/R answer the two
 * questions, 1-5 (Shift for a half) rate confidence, T stamps the time into the rationale, and the
 * transport's own keys (static/js/ab-transport.js) play, switch, seek and loop. Keys typed into a text
 * field stay there. AuditoriumListen.keyboard({...}) installs it for static/annotation/listening.js.
 */
(() => {
  "use strict";

  function keyboard({ app, el, current, activeQuestion, confirmRead, submit, loadNext, setChoice, setConfidence, insertTime, announce, transportKey }) {
    const TYPING = "textarea, input[type=text], input[type=search], input:not([type]), select, [contenteditable=true]";
    const NATIVE_ENTER = "button, a[href], summary, audio";

    document.addEventListener("keydown", (event) => {
      const task = current();
      if (event.altKey || event.metaKey || event.isComposing) return;
      if (el.skipDialog.open) return;
      const target = event.target;
      const stage = app.dataset.stage;
      if (target.matches && target.matches(TYPING)) {
        if (event.key === "Escape") {
          target.blur();
          event.preventDefault();
        } else if (event.key === "Enter" && event.ctrlKey && target === el.rationale) {
          event.preventDefault();
          submit();
        }
        return;
      }
      if (event.ctrlKey) return;
      if (stage === "saved") {
        if (event.key === "Enter" && !(target.matches && target.matches(NATIVE_ENTER))) {
          event.preventDefault();
          loadNext();
        }
        return;
      }
      if (stage !== "task" || !task) return;
      const transport = task.transport;
      const unlocked = task.saved.read && transport && transport.ready;
      const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      const digit = /^(Digit|Numpad)([1-5])$/.exec(event.code || "");
      // A held key repeats; only seeking should.
      if (event.repeat && key !== "ArrowLeft" && key !== "ArrowRight") {
        if (key === " " || key === "Enter") event.preventDefault();
        return;
      }

      if (key === "Enter") {
        if (target.matches && target.matches(NATIVE_ENTER)) return; // let buttons and links do their own thing
        event.preventDefault();
        if (!task.saved.read) confirmRead();
        else submit();
        return;
      }
      if (digit) {
        event.preventDefault();
        setConfidence(activeQuestion(), Number(digit[2]) + (event.shiftKey ? 0.5 : 0));
        return;
      }
      switch (key) {
        case "q":
        case "w":
          event.preventDefault();
          setChoice("alignment", key === "q" ? "A" : "B");
          return;
        case "e":
        case "r":
          event.preventDefault();
          setChoice("musicality", key === "e" ? "A" : "B");
          return;
        default:
          break;
      }
      if (!unlocked) {
        if (key === " ") {
          event.preventDefault();
          announce("Read the instruction and press Enter to unlock the clips first.");
        }
        return;
      }
      if (key === "t") {
        event.preventDefault();
        insertTime();
        return;
      }
      transportKey(transport, event, announce);
    });
  }

  window.AuditoriumListen = Object.assign(window.AuditoriumListen || {}, { keyboard });
})();
