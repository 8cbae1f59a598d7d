import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A comment that cites a document sends the reader there: the document must be in the
// repository. Documents kept outside it (the design card, the conventions) are cited by no
// comment; the rule a comment leans on is stated in it, or in a docs/ page it names.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
const FOLDERS = ['src', 'workers'];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path);
    return /\.(ts|lua)$/.test(name) ? [path] : [];
  });
}

/** The comments of a TypeScript file (line, block, JSDoc) or of a Lua script (`--`), as text. */
function commentsOf(text: string, lua = false): string {
  if (lua) return [...text.matchAll(/--(.*)$/gm)].map((m) => m[1]!).join('\n');
  const blocks = [...text.matchAll(/\/\*[\s\S]*?\*\//g)].map((m) => m[0]);
  const lines = [...text.matchAll(/(?:^|\s)\/\/(.*)$/gm)].map((m) => m[1]!);
  return [...blocks, ...lines].join('\n');
}
const commentsOfFile = (file: string): string => commentsOf(readFileSync(join(ROOT, file), 'utf8'), file.endsWith('.lua'));

/** Repository paths a comment names (`docs/safety.md`, `bench/README.md`, `workers/engine/gate.ts`). */
function citedPaths(comments: string): string[] {
  return [...comments.matchAll(/(?<![\w./-])((?:docs|bench|deploy|src|workers|scripts|test)\/[\w./-]*\w\.(?:md|ts|yaml|json|lua|cjs))\b/g)].map((m) => m[1]!);
}

/** Documents outside the repository, by the names comments used to give them. */
function outsideDocuments(comments: string): string[] {
  return [...comments.matchAll(/\b(DESIGN(?:\.md)?|CONVENTIONS(?:\.md)?(?: \d+)?)\b/g)].map((m) => m[1]!);
}

/** Measured figures: "~40 ms", "+7%", "7% less of". A default or a cap ("default 2000 ms") is not one. */
function measuredFigures(comments: string): string[] {
  return [...comments.matchAll(/~ ?\d[\d,.]* ?(?:ns|us|µs|ms|s|KiB|MiB|GiB|KB|MB)\b|[+-]\d+(?:\.\d+)?%|\d+(?:\.\d+)?% (?:less|more) of/g)].map((m) => m[0]);
}

describe('documents cited in comments under src/ and workers/', () => {
  const files = FOLDERS.flatMap(sourceFiles);

  it('every path a comment cites exists in the repository', () => {
    const missing = files.flatMap((file) =>
      citedPaths(commentsOfFile(file))
        .filter((path) => !existsSync(join(ROOT, path)))
        .map((path) => `${file}: ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it('no comment cites the design card or the conventions, which are not in the repository', () => {
    const cited = files.flatMap((file) => outsideDocuments(commentsOfFile(file)).map((doc) => `${file}: ${doc}`));
    expect(cited).toEqual([]);
  });

  it('measured figures live in bench/README.md, not in comments', () => {
    const found = files.flatMap((file) => measuredFigures(commentsOfFile(file)).map((figure) => `${file}: ${figure}`));
    expect(found).toEqual([]);
  });

  it('would catch a missing document and an outside one', () => {
    const comments = commentsOf('const a = 1; // see docs/no-such-page.md and bench/README.md\n/* DESIGN, "Contracts"; CONVENTIONS 4 */');
    expect(citedPaths(comments)).toEqual(['docs/no-such-page.md', 'bench/README.md']);
    expect(outsideDocuments(comments)).toEqual(['DESIGN', 'CONVENTIONS 4']);
    expect(measuredFigures('// ~40 us per insert, +7% jobs/s, 7% less of Redis; default 2000 ms, 1 MiB read')).toEqual(['~40 us', '+7%', '7% less of']);
  });
});
