// Plain-text tables for a terminal: columns padded to their widest cell, long cells cut with an
// ellipsis so a row stays on one line.

export function table(headers: readonly string[], rows: readonly (readonly unknown[])[], maxWidth = 60): string {
  const cell = (v: unknown): string => {
    const s = v === undefined || v === null ? '' : String(v).replace(/\s+/g, ' ');
    return s.length > maxWidth ? `${s.slice(0, maxWidth - 1)}…` : s;
  };
  const cells = rows.map((r) => headers.map((_, i) => cell(r[i])));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (r: readonly string[]): string =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...cells.map(line)].join('\n');
}

/** `key: value` lines, keys aligned. */
export function fields(pairs: readonly (readonly [string, unknown])[]): string {
  const shown = pairs.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const w = Math.max(0, ...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${`${k}:`.padEnd(w + 2)}${String(v)}`).join('\n');
}
