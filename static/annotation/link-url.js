/* Recruitment link URLs on the study page: focusing the box selects the whole URL, ready to copy.
 * A listener here, not an inline handler, which the Content-Security-Policy refuses. */
document.addEventListener("focusin", (event) => {
  if (event.target instanceof HTMLInputElement && event.target.matches("input.link-url")) event.target.select();
});
