import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The test files docs/threat-model.md names (`test/.../*.test.ts`), and those of them that do not exist.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function securityTests(doc = readFileSync(join(ROOT, 'docs', 'threat-model.md'), 'utf8')): { files: string[]; missing: string[] } {
  const files = [...new Set([...doc.matchAll(/test\/[A-Za-z0-9_./-]+\.test\.ts/g)].map((m) => m[0]))].sort();
  return { files, missing: files.filter((f) => !existsSync(join(ROOT, f))) };
}
