// The study page's export: send the options, follow the worker's progress, then download the zip.
// Without this script the form still posts and the page shows the export's state after a reload.
(() => {
  "use strict";
  const form = document.getElementById("export-form");
  const box = document.getElementById("export-status");
  if (!form || !box) return;
  const $ = (id) => document.getElementById(id);
  const POLL_MS = 500;
  let polling = null;

  function balancedShown() {
    const chosen = form.querySelector("input[name=split]:checked");
    $("export-balance").hidden = !chosen || chosen.value !== "balanced";
  }
  form.querySelectorAll("input[name=split]").forEach((input) => input.addEventListener("change", balancedShown));
  balancedShown();

  function size(bytes) {
    if (bytes == null) return "";
    const units = ["bytes", "KB", "MB", "GB"];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return ` (${unit ? value.toFixed(1) : value} ${units[unit]})`;
  }

  function show(status) {
    box.hidden = false;
    box.dataset.state = status.state;
    box.dataset.statusUrl = status.status_url || box.dataset.statusUrl;
    $("export-state").textContent = status.label;
    $("export-summary").textContent = status.summary ? `· ${status.summary}` : "";
    $("export-step").textContent = status.state === "running" && status.step ? `${status.step}${status.total ? ` · ${status.done} of ${status.total}` : ""}` : "";
    const bar = $("export-progress");
    bar.max = Math.max(1, status.total);
    bar.value = status.state === "done" ? bar.max : status.done;
    $("export-message").textContent = status.message || "";
    $("export-message").classList.toggle("error", status.state === "failed");
    const link = $("export-download");
    link.hidden = !status.download_url;
    if (status.download_url) {
      link.href = status.download_url;
      link.textContent = `Download the zip${size(status.size_bytes)}`;
    }
  }

  async function poll(startDownload) {
    clearTimeout(polling);
    let status;
    try {
      const response = await fetch(box.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      status = await response.json();
    } catch (err) {
      $("export-message").textContent = `The export's state could not be read (${err.message}); retrying.`;
      polling = setTimeout(() => poll(startDownload), POLL_MS * 4);
      return;
    }
    show(status);
    if (status.state === "done") {
      $("export-submit").disabled = false;
      // The archive was asked for on this page just now: hand it over without another click.
      if (startDownload) window.location.assign(status.download_url);
    } else if (status.state === "failed") {
      $("export-submit").disabled = false;
    } else {
      polling = setTimeout(() => poll(startDownload), POLL_MS);
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    $("export-submit").disabled = true;
    form.querySelectorAll(".errorlist.live").forEach((node) => node.remove());
    let response;
    let data = {};
    try {
      response = await fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin", headers: { Accept: "application/json" } });
      data = await response.json();
    } catch (err) {
      $("export-submit").disabled = false;
      show({ state: "failed", label: "Not started", message: `The server could not be reached (${err.message}).`, done: 0, total: 0 });
      return;
    }
    if (!response.ok) {
      $("export-submit").disabled = false;
      for (const [name, errors] of Object.entries(data.errors || {})) {
        const input = form.querySelector(`[name=${name}]`);
        const list = document.createElement("ul");
        list.className = "errorlist live";
        list.setAttribute("role", "alert");
        for (const error of errors) {
          const item = document.createElement("li");
          item.textContent = error.message;
          list.append(item);
        }
        (input ? input.closest(".field, fieldset") || form : form).append(list);
      }
      show({ state: "failed", label: "Not started", message: data.detail || `HTTP ${response.status}`, done: 0, total: 0 });
      return;
    }
    show(data);
    poll(true);
  });

  // Opened while an export was still being built (a reload, another tab): follow it, without downloading.
  if (box.dataset.statusUrl && ["pending", "running"].includes(box.dataset.state || "")) poll(false);
})();
