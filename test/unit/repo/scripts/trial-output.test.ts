import { describe, expect, it } from 'vitest';
import { humanLine, trialOutput } from '../../../../scripts/lib/trial-output.ts';

const sink = (isTTY: boolean) => {
  const written: string[] = [];
  return { out: { isTTY, write: (s: string) => written.push(s) }, text: () => written.join('') };
};
const URL = 'http://127.0.0.1:8080';

describe('npm start speaks to a person at a terminal, and JSON to anything else', () => {
  it('at a terminal: readable lines, and the start-up hint a block of commands to paste', () => {
    const { out, text } = sink(true);
    const { log, started } = trialOutput(out, 'info');
    log.warn('no VOLUME_MEDIC_TOKEN: this trial receiver accepts requests without authentication');
    log.child({ component: 'receiver' }).info({ jobs: 2, queue: 'vm-node-{worker-1}' }, 'jobs stored');
    started(URL, 'worker-1');
    const lines = text().split('\n');
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d WARN no VOLUME_MEDIC_TOKEN: this trial receiver accepts requests without authentication$/);
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d receiver: jobs stored jobs=2 queue=vm-node-\{worker-1\}$/);
    expect(text()).toContain(`volume-medic is running at ${URL}, with a node agent for worker-1`);
    expect(text()).toContain(`\n  curl -s -H 'Content-Type: application/json' '${URL}/v1/explain?source=alertmanager' -d @test/fixtures/alertmanager/`);
    expect(text()).toContain(`\n  curl -s ${URL}/v1/jobs\n`);
    expect(text()).not.toMatch(/^\{/m);
  });

  it('not a terminal: the JSON lines every deployed process writes, the hint inside one of them', () => {
    const { out, text } = sink(false);
    const { log, started } = trialOutput(out, 'info');
    log.warn('no VOLUME_MEDIC_TOKEN: this trial receiver accepts requests without authentication');
    started(URL, 'worker-1');
    const records = text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.map((r) => [r['level'], r['name']])).toEqual([
      [40, 'dev'],
      [30, 'dev'],
    ]);
    expect(records[1]).toMatchObject({ receiver: URL, node: 'worker-1', mode: 'dry-run' });
    expect(records[1]!['msg']).toMatch(/^volume-medic is running\. Try: curl /);
  });

  it('a line that is not pino JSON passes through; quotes values with spaces; an error shows its message', () => {
    expect(humanLine('plain text')).toBe('plain text');
    expect(
      humanLine(JSON.stringify({ level: 50, time: Date.UTC(2026, 11, 7, 3, 4, 5), msg: 'failed', why: 'two words', err: { message: 'boom', stack: 'x' } })),
    ).toBe('03:04:05 ERROR failed why="two words" err="boom"');
  });

  it('drops the control characters a webhook or a host put in a message or a field, as the CLI does', () => {
    const hostile = '\u001b]0;owned\u0007x\u009b2J';
    const line = humanLine(JSON.stringify({ level: 30, time: 0, msg: `job ${hostile}`, node: hostile }));
    expect(line).toBe('00:00:00 job ]0;ownedx2J node=]0;ownedx2J');
    expect(humanLine(`plain ${hostile}`)).toBe('plain ]0;ownedx2J');
  });
});
