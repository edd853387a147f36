/** Any code unit outside ASCII: only such strings need counting unit by unit. */
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The platform's UTF-8 length, where it has one (Node's `Buffer.byteLength`, reached without
 * importing `node:`): one native pass, no copy, and the same rule (a lone surrogate is the 3 bytes
 * of U+FFFD). Elsewhere, `countUtf8`.
 */
const nativeUtf8Length: ((text: string) => number) | undefined = (() => {
  const host = globalThis as {
    Buffer?: { byteLength?: (text: string, encoding: "utf8") => number };
  };
  const byteLength = host.Buffer?.byteLength;
  return typeof byteLength === "function" ? (text: string) => byteLength(text, "utf8") : undefined;
})();

/** UTF-8 length without allocating; a lone surrogate counts as the 3 bytes of U+FFFD. */
export const utf8Length: (text: string) => number = nativeUtf8Length ?? countUtf8;

function countUtf8(text: string): number {
  // ASCII (ids, keys, most text) is one byte per unit; the scan runs in the regex engine.
  if (!NON_ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
