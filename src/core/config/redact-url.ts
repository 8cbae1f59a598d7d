// Credentials travel inside URLs (REDIS_URL=redis://user:password@host:6379): a URL must never
// be logged or put in an error message with them. Two helpers, one for a value that should be a
// URL (a setting, possibly malformed: everything between the scheme and its LAST `@` is hidden,
// so a password holding `@`, `/` or a space does not leak in part), and one for free text (log
// lines, messages), where a URL ends at whitespace or a quote.

const HIDDEN = '***';

/** A single URL-ish value with its userinfo hidden; unchanged when it has no `@`. */
export function redactUrl(value: string): string {
  const at = value.lastIndexOf('@');
  if (at < 0) return value;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/+/.exec(value)?.[0] ?? '';
  return at < scheme.length ? value : `${scheme}${HIDDEN}${value.slice(at)}`;
}

const IN_TEXT = /\b([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s"'<>`]*@/g;

/** Every `scheme://userinfo@` in a text, userinfo hidden. */
export function redactUrlsIn(text: string): string {
  return text.includes('://') ? text.replace(IN_TEXT, `$1${HIDDEN}@`) : text;
}
