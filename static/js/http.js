/* JSON requests to the platform's own APIs, with Django's CSRF header. One copy for every page script;
 * each page decides how to show a failure, from the server's message this module hands back.
 *
 * window.AuditoriumHTTP:
 *   request(url, {method, body, keepalive}) -> {ok, status, data, message, retryAfter}
 *     never throws for an HTTP status (only when the server cannot be reached); data is the parsed JSON
 *     body or null; message is the server's sentence when the request failed (null when it gave none).
 *   postJSON(url, body) -> the same, as a POST of body (an empty object when none).
 *   call(url, body) -> the response's data on success; otherwise throws an HttpError (status, data, and
 *     the server's message, or "The server answered N." when it gave none).
 *   csrfToken(), serverMessage(data), HttpError.
 */
(() => {
  "use strict";

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    // CSRF_COOKIE_HTTPONLY or a page served before the cookie was set: the form's hidden field has it too.
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // Every API answers errors as {"detail": sentence, "code": slug, ...} (common/api_errors.py); the other
  // spellings are what a proxy or an older endpoint may send.
  function serverMessage(data) {
    if (!data || typeof data !== "object") return null;
    for (const value of [data.detail, data.message, data.error && data.error.message, data.error]) {
      if (typeof value === "string" && value) return value;
    }
    return null;
  }

  class HttpError extends Error {
    constructor(message, status, data) {
      super(message);
      this.name = "HttpError";
      this.status = status;
      this.data = data;
    }
  }

  async function request(url, { method = "GET", body, keepalive = false } = {}) {
    const headers = { Accept: "application/json" };
    const options = { method, credentials: "same-origin", headers, keepalive };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    if (!["GET", "HEAD", "OPTIONS"].includes(method.toUpperCase())) headers["X-CSRFToken"] = csrfToken();
    const response = await fetch(url, options);
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    return {
      ok: response.ok,
      status: response.status,
      data,
      message: response.ok ? null : serverMessage(data),
      retryAfter: response.headers.get("Retry-After"),
    };
  }

  function postJSON(url, body) {
    return request(url, { method: "POST", body: body || {} });
  }

  async function call(url, body) {
    const result = await postJSON(url, body);
    if (!result.ok) throw new HttpError(result.message || `The server answered ${result.status}.`, result.status, result.data || {});
    return result.data || {};
  }

  window.AuditoriumHTTP = { HttpError, call, csrfToken, postJSON, request, serverMessage };
})();
