// Some Ceph commands print more than one JSON document on stdout: `ceph osd blocklist ls
// --format json` (16.2) prints the address blocklist and then the range blocklist, back to back
// (`[{"addr":...}][]`). This splits such output into its top-level values.

export function jsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (c === ']' || c === '}') {
      depth--;
      if (depth === 0 && start >= 0) {
        values.push(JSON.parse(text.slice(start, i + 1)));
        start = -1;
      }
    }
  }
  if (depth !== 0) throw new SyntaxError('unbalanced JSON output');
  return values;
}
