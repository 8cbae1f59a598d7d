import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A comment that cites a document sends the reader there: the document must be in the
// repository. Documents kept outside it (the design card, the conventions) are cited by no
// comment; the rule a comment leans on is stated in it, or in a docs/ page it names.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const FOLDERS = ['src', 'workers'];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path);
    return /\.(ts|lua)$/.test(name) ? [path] : [];
  });
}

/** The comments of a TypeScript or Lua file, as text (line comments, block comments, JSDoc). */
function commentsOf(text: string): string {
  const blocks = [...text.matchAll(/\/\*[\s\S]*?\*\//g)].map((m) => m[0]);
  const lines = [...text.matchAll(/(?:^|\s)(?:\/\/|--)(.*)$/gm)].map((m) => m[1]!);
  return [...blocks, ...lines].join('\n');
}

/** Repository paths a comment names (`docs/safety.md`, `bench/README.md`, `workers/engine/gate.ts`). */
function citedPaths(comments: string): string[] {
  return [...comments.matchAll(/(?<![\w./-])((?:docs|bench|deploy|src|workers|scripts|test)\/[\w./-]*\w\.(?:md|ts|yaml|json|lua|cjs))\b/g)].map((m) => m[1]!);
}

/** Documents outside the repository, by the names comments used to give them. */
function outsideDocuments(comments: string): string[] {
  return [...comments.matchAll(/\b(DESIGN(?:\.md)?|CONVENTIONS(?:\.md)?(?: \d+)?)\b/g)].map((m) => m[1]!);
}

describe('documents cited in comments under src/ and workers/', () => {
  const files = FOLDERS.flatMap(sourceFiles);

  it('every path a comment cites exists in the repository', () => {
    const missing = files.flatMap((file) =>
      citedPaths(commentsOf(readFileSync(join(ROOT, file), 'utf8')))
        .filter((path) => !existsSync(join(ROOT, path)))
        .map((path) => `${file}: ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it('no comment cites the design card or the conventions, which are not in the repository', () => {
    const cited = files.flatMap((file) => outsideDocuments(commentsOf(readFileSync(join(ROOT, file), 'utf8'))).map((doc) => `${file}: ${doc}`));
    expect(cited).toEqual([]);
  });

  it('would catch a missing document and an outside one', () => {
    const comments = commentsOf('const a = 1; // see docs/no-such-page.md and bench/README.md\n/* DESIGN, "Contracts"; CONVENTIONS 4 */');
    expect(citedPaths(comments)).toEqual(['docs/no-such-page.md', 'bench/README.md']);
    expect(outsideDocuments(comments)).toEqual(['DESIGN', 'CONVENTIONS 4']);
  });
});
