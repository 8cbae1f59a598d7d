// The text of one member of a JSON object's top level, found by scanning the text that
// JSON.parse has already accepted, without parsing it again (a repeated Alertmanager
// group is recognised by its `alerts`, whatever else in the body differs; ingest/repeat-answers.ts).
//
// Exact, or nothing: the text returned parses to the very value JSON.parse put under that name.
// Keys are compared as JSON.parse sees them (`"al\u0065rts"` is the key `alerts`). Whenever the
// answer could be in doubt it is undefined and the caller takes its full path: the name present
// more than once (JSON.parse keeps the last; we do not guess), anything but an object at the top.
// The input must be text JSON.parse accepted: the scanner trusts its grammar (it checks only
// what it needs to find its way) and is not a validator.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(text: string, i: number): number {
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** `i` at a string's opening quote: the index after its closing quote, or -1. */
function stringEnd(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) return -1;
    // Escaped when preceded by an odd number of backslashes.
    let b = q - 1;
    while (b > i && text.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** `i` at a value's first character: the index after the value, or -1. */
function valueEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return stringEnd(text, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text.charCodeAt(j);
      if (d === QUOTE) {
        j = stringEnd(text, j);
        if (j < 0) return -1;
        j--;
      } else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  let j = i;
  while (j < text.length) {
    const d = text.charCodeAt(j);
    if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
    j++;
  }
  return j > i ? j : -1;
}

/** The text of the top-level member `name` of the JSON object `text`, when that is certain. */
export function topLevelMember(text: string, name: string): string | undefined {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== 0x7b) return undefined;
  i = skipSpace(text, i + 1);
  let found: string | undefined;
  let seen = 0;
  while (text.charCodeAt(i) === QUOTE) {
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return undefined;
    const raw = text.slice(i + 1, keyEnd - 1);
    // Written with escapes (rare): decoded as JSON.parse decodes it.
    const key = raw.includes('\\') ? (JSON.parse(text.slice(i, keyEnd)) as string) : raw;
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== 0x3a) return undefined;
    const start = skipSpace(text, i + 1);
    const end = valueEnd(text, start);
    if (end < 0) return undefined;
    if (key === name) {
      seen++;
      found = text.slice(start, end);
    }
    i = skipSpace(text, end);
    if (text.charCodeAt(i) !== 0x2c) break;
    i = skipSpace(text, i + 1);
  }
  if (text.charCodeAt(i) !== 0x7d || skipSpace(text, i + 1) !== text.length) return undefined;
  return seen === 1 ? found : undefined;
}
