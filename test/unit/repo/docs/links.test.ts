import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The README is a front door to docs/: every relative link in it and in docs/ must lead to a file
// of the repository, and a link to a heading (`page.md#heading`) to a heading that page has.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../../..');

// Pages another process writes: docs/configuration.md is generated from the settings'
// declarations (src/core/config); a link to it is good even in a tree where it is not written yet.
const GENERATED = new Set(['docs/configuration.md']);

function markdownFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/** Markdown text without fenced code blocks and inline code: links there are examples, not links. */
function proseOf(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The relative link targets of a Markdown text (`[text](target)`, images too). */
function relativeLinks(text: string): string[] {
  return [...proseOf(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} +(.+)$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a id="([^"]+)"/g)) anchors.add(m[1]!);
  return anchors;
}

/** The links of `file` (relative to the repository) that lead nowhere, each with why. */
function brokenLinks(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const broken: string[] = [];
  for (const target of relativeLinks(text)) {
    const [path = '', anchor] = target.split('#') as [string, string | undefined];
    const resolved = path === '' ? file : relative(ROOT, join(ROOT, dirname(file), decodeURIComponent(path)));
    if (!existsSync(join(ROOT, resolved))) {
      if (!GENERATED.has(resolved)) broken.push(`${target}: no file ${resolved}`);
      continue;
    }
    if (anchor && resolved.endsWith('.md') && !anchorsOf(readFileSync(join(ROOT, resolved), 'utf8')).has(anchor))
      broken.push(`${target}: ${resolved} has no heading #${anchor}`);
  }
  return broken;
}

describe('links of README.md and docs/', () => {
  const files = ['README.md', ...markdownFiles('docs')];

  it('the README links to the docs pages, and the README stays a front door', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    const linked = new Set(relativeLinks(readme).map((t) => t.split('#')[0]));
    for (const page of markdownFiles('docs').filter((f) => !f.startsWith('docs/decisions/'))) expect(linked, page).toContain(page);
  });

  it('names the test command CI runs, verbatim', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8');
    const command = 'scripts/with-node npm test';
    expect(readme).toContain(`\n${command} `);
    expect(ci).toMatch(/^scripts\/with-node npm test 2>&1/m);
  });

  // The other READMEs are doors too: what they link to must be there.
  const others = ['bench/README.md', 'deploy/README.md', 'src/core/controls/README.md', 'test/fixtures/README.md', 'test/lab/README.md'].filter((f) =>
    existsSync(join(ROOT, f)),
  );
  it.each(others)('every relative link of %s leads to a file and heading that exist', (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it.each(files)('every relative link of %s leads to a file and heading that exist', (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it('would catch a link to a missing page or heading', () => {
    expect(relativeLinks('see [a](docs/a.md), `[b](x.md)`, [c](https://x.example/) and [d](#here)')).toEqual(['docs/a.md', '#here']);
    expect(slug('Event sources: whom volume-medic believes')).toBe('event-sources-whom-volume-medic-believes');
    expect(slug('Console (`npm run bench:console`, issue 23)')).toBe('console-npm-run-benchconsole-issue-23');
  });
});
