import { describe, expect, it } from 'vitest';
import { guessSource } from '../../../../src/control/cli/commands.ts';
import { fields, table } from '../../../../src/control/cli/table.ts';

describe('CLI output helpers', () => {
  it('pads columns to the widest cell and cuts long cells with an ellipsis', () => {
    expect(
      table(
        ['id', 'state'],
        [
          ['a', 'completed'],
          ['bbbbbb', 'failed'],
        ],
      ),
    ).toBe('ID      STATE\na       completed\nbbbbbb  failed');
    expect(table(['x'], [['0123456789']], 5)).toBe('X\n0123…');
  });

  it('aligns key: value lines and leaves out empty values', () => {
    expect(
      fields([
        ['job', 'j1'],
        ['outcome', undefined],
        ['mode', 'enforce'],
      ]),
    ).toBe('job:  j1\nmode: enforce');
  });

  it("guesses a payload's source from its shape", () => {
    expect(guessSource({ version: '4', alerts: [] })).toBe('alertmanager');
    expect(guessSource({ node: 'n', conditions: [] })).toBe('npd');
    expect(guessSource([{ kind: 'Event' }])).toBe('events');
    expect(guessSource({ kind: 'Event' })).toBe('events');
  });
});
