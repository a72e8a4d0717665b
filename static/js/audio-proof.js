/* The answer to an audio response's Audio-Proof header (common/audio_proof.py): the bytes of the
 * response at the ranges its signed token names, base64. Only a client that received the bytes can
 * give it; the listening post carries it as a receipt, and only proven fetches count as heard.
 *
 * AuditoriumProof.receipt(response, bytes, side) gives {side, token, bytes} or null (no header:
 * a response from a cache that stripped it, or a server without the proof); `bytes` is the
 * response's body as an ArrayBuffer, read before decodeAudioData takes it.
 */
(() => {
  "use strict";

  function tokenRanges(token) {
    // The token is Django's signed JSON: base64url of the JSON, then ":timestamp:signature".
    let text = token.split(":")[0].replace(/-/g, "+").replace(/_/g, "/");
    while (text.length % 4) text += "=";
    const payload = JSON.parse(atob(text));
    return { first: payload.f, ranges: payload.r };
  }

  function receipt(response, bytes, side) {
    const token = response.headers.get("Audio-Proof");
    if (!token) return null;
    const { first, ranges } = tokenRanges(token);
    const view = new Uint8Array(bytes);
    let binary = "";
    for (const [offset, length] of ranges) {
      const start = offset - first;
      for (let k = start; k < start + length; k += 1) binary += String.fromCharCode(view[k]);
    }
    return { side, token, bytes: btoa(binary) };
  }

  window.AuditoriumProof = { receipt };
})();
