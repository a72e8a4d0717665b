// Pairs import: send the form with XMLHttpRequest so a large upload shows its progress.
// Without JavaScript the form posts as usual; the server's answer is the same page either way.
(function () {
  "use strict";
  const form = document.getElementById("import-form");
  if (!form || !window.FormData) return;
  const box = document.getElementById("upload-progress");
  const bar = document.getElementById("upload-bar");
  const status = document.getElementById("upload-status");
  const submit = document.getElementById("import-submit");

  function mib(bytes) { return (bytes / 1048576).toFixed(1) + " MiB"; }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action || location.href);
    box.hidden = false;
    submit.disabled = true;
    status.textContent = "Starting the upload…";
    xhr.upload.onprogress = function (e) {
      if (!e.lengthComputable) return;
      bar.max = e.total;
      bar.value = e.loaded;
      status.textContent = `Uploaded ${mib(e.loaded)} of ${mib(e.total)}`;
    };
    xhr.upload.onload = function () {
      bar.removeAttribute("value");  // indeterminate while the server checks rows and audio
      status.textContent = "Upload complete. Checking every row and audio file…";
    };
    xhr.onload = function () {
      // Success ends on the result page (a redirect); a refusal comes back as this page with its messages.
      if (xhr.responseURL && new URL(xhr.responseURL).pathname !== location.pathname) {
        location.assign(xhr.responseURL);
        return;
      }
      document.open();
      document.write(xhr.responseText);
      document.close();
    };
    xhr.onerror = function () {
      submit.disabled = false;
      status.textContent = "The upload failed (connection lost). Nothing was imported; try again.";
    };
    xhr.send(new FormData(form));
  });
})();
