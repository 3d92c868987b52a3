import { isUtf8 } from "node:buffer";

/**
 * Rules about text that keep data as it was sent: ids that end up in NATS and
 * HTTP headers, and strings JSON and protobuf cannot carry unchanged.
 */

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Whether text holds a control character: C0 (U+0000-U+001F), DEL (U+007F) or
 * C1 (U+0080-U+009F). A messageId or batch id is written into NATS and HTTP
 * headers, where a line break ends the header early; other Unicode is fine.
 */
export function hasControlCharacter(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/** What an id with a control character is refused with, after "<field>: ". */
export const CONTROL_CHARACTERS_RULE_MESSAGE = "must not contain control characters";

/**
 * Whether a JavaScript string is valid Unicode: no lone surrogate (a JSON
 * escape such as "\ud800" without its pair). UTF-8 cannot encode one, so it
 * would reach the bus as U+FFFD.
 */
export function isWellFormedText(text: string): boolean {
  // Node 20 has String.prototype.isWellFormed (ES2024); the project's type library is ES2023.
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * Whether bytes are valid UTF-8. Text that is not would be decoded with U+FFFD
 * in place of the broken bytes, so a body or protobuf string failing this is
 * refused rather than altered.
 */
export function isUtf8Bytes(bytes: Uint8Array): boolean {
  return isUtf8(bytes);
}

/** An HTTP header name: a token (RFC 9110). */
export const HTTP_HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** An HTTP header value as Switchyard sends one: visible ASCII, spaces and tabs (no CR, LF, NUL or other control characters). */
export const HTTP_HEADER_VALUE = /^[\t\x20-\x7e]*$/;
