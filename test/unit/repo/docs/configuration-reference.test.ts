import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configurationReference, REFERENCE_PATH } from '../../../../scripts/lib/config-reference.ts';
import { configVariables } from '../../../../src/core/config/load.ts';

describe('the configuration reference', () => {
  const reference = configurationReference();

  it('docs/configuration.md is what the declarations give (node scripts/config-docs.ts writes it)', () => {
    expect(readFileSync(REFERENCE_PATH, 'utf8')).toBe(reference);
  });

  it('lists every variable the configuration reads', () => {
    for (const name of configVariables()) expect(reference, name).toContain(`\`${name}\``);
  });
});
