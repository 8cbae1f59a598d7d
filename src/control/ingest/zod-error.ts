import type { z } from 'zod';

// A 422 must name the field. For a union (an Event may be core/v1 or events.k8s.io/v1) the most
// useful message is the branch that got furthest: the issue with the longest path.

type Issue = z.core.$ZodIssue;

function deepest(issue: Issue, base: readonly PropertyKey[]): { path: PropertyKey[]; message: string } {
  const path = [...base, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const candidates = issue.errors.flatMap((branch) => branch.map((i) => deepest(i, path)));
    candidates.sort((a, b) => b.path.length - a.path.length);
    if (candidates[0]) return candidates[0];
  }
  return { path, message: issue.message };
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || '(body)';
}

export function describeZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const d = deepest(i, []);
      return `${formatPath(d.path)}: ${d.message}`;
    })
    .join('; ');
}
