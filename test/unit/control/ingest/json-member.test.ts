import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { topLevelMember } from '../../../../src/control/ingest/json-member.ts';

// The member's text must parse to exactly what JSON.parse put under that name, or be undefined.

/** JSON text of `value` in one of the layouts senders produce: compact, indented, tabs, CRLF. */
const layouts = [
  (v: unknown) => JSON.stringify(v),
  (v: unknown) => JSON.stringify(v, null, 2),
  (v: unknown) => JSON.stringify(v, null, '\t'),
  (v: unknown) => JSON.stringify(v, null, 1).replaceAll('\n', '\r\n'),
  (v: unknown) => ` \n${JSON.stringify(v)}\n `,
];

describe('topLevelMember', () => {
  it('finds the member whatever the layout, key order and content around it', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })),
        fc.jsonValue({ maxDepth: 4 }),
        fc.nat(),
        fc.integer({ min: 0, max: layouts.length - 1 }),
        (others, alerts, at, layout) => {
          delete others['alerts'];
          const entries = Object.entries(others);
          entries.splice(at % (entries.length + 1), 0, ['alerts', alerts]);
          const text = layouts[layout]!(Object.fromEntries(entries));
          const member = topLevelMember(text, 'alerts');
          expect(member).toBeDefined();
          expect(JSON.parse(member!)).toEqual(JSON.parse(text).alerts);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('is undefined when the object has no such member at its top level', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })), (o) => {
        delete o['alerts'];
        expect(topLevelMember(JSON.stringify({ ...o, nested: { alerts: [1] } }), 'alerts')).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('handles strings that hold quotes, backslashes, braces and the member name', () => {
    const tricky = ['\\', '\\\\', '"', '\\"', '"alerts":[9]', '}', ']', '{"alerts":1}', 'a\\', '\u2028', '\ud83d\ude00'];
    for (const s of tricky) {
      const text = JSON.stringify({ before: s, [s]: s, alerts: [{ s }, s], after: [s, { s }] });
      expect(JSON.parse(topLevelMember(text, 'alerts')!)).toEqual([{ s }, s]);
    }
  });

  it('compares keys as JSON.parse decodes them', () => {
    expect(topLevelMember('{"al\\u0065rts":[1],"x":2}', 'alerts')).toBe('[1]');
    expect(topLevelMember('{"\\"alerts":[1],"x":2}', 'alerts')).toBeUndefined();
    expect(topLevelMember('{"\\"alerts":[1],"x\\\\":2}', 'x\\')).toBe('2');
  });

  it('gives up when the answer could be in doubt', () => {
    // Twice (one of them written with an escape): JSON.parse keeps the last one.
    expect(topLevelMember('{"alerts":[1],"al\\u0065rts":[2]}', 'alerts')).toBeUndefined();
    expect(topLevelMember('{"alerts":[1],"alerts":[2]}', 'alerts')).toBeUndefined();
    // Not an object at the top.
    expect(topLevelMember('[{"alerts":[1]}]', 'alerts')).toBeUndefined();
    expect(topLevelMember('"alerts"', 'alerts')).toBeUndefined();
    expect(topLevelMember('{}', 'alerts')).toBeUndefined();
  });

  it('returns values of every JSON kind as written', () => {
    for (const v of ['[]', '{}', '0', '-1.5e+10', 'true', 'false', 'null', '"x"', '[ 1 , { "a" : [ ] } ]']) {
      expect(topLevelMember(`{ "alerts" : ${v} , "z": 1 }`, 'alerts')).toBe(v);
      expect(topLevelMember(`{"z":1,"alerts":${v}}`, 'alerts')).toBe(v);
    }
  });
});
