import type { DestinationStream } from 'pino';
import { createLogger, type Logger } from '../../src/adapters/observability/logger.ts';
import { terminalSafe } from '../../src/control/cli/terminal-safe.ts';

// `npm start` is read by a person at a terminal: there its log lines are plain sentences, one a
// line (time, level when not info, who, what, then the fields), and the start-up hint is a short
// block of commands to paste. Piped or redirected, it writes pino's JSON lines as every deployed
// process does, so a log collector or `jq` reads it unchanged. JSON escaped control characters;
// plain lines do not, and log fields carry text from webhooks and hosts, so a plain line loses
// them as the CLI's output does (terminalSafe).

/** Where the trial writes: the terminal (process.stdout) or, in tests, any sink. */
export interface Sink {
  write(text: string): unknown;
  isTTY?: boolean;
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: '', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, or that the line's lead already says. */
const LEAD = new Set(['level', 'time', 'pid', 'hostname', 'name', 'component', 'msg', 'v']);

const value = (v: unknown): string => {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  if (v && typeof v === 'object' && 'message' in v && typeof v.message === 'string') return JSON.stringify(v.message);
  return JSON.stringify(v);
};

/** One pino JSON line as a person reads it, safe for a terminal; a line that is not pino's JSON comes back as it was, less control characters. */
export function humanLine(line: string): string {
  return terminalSafe(readable(line));
}

function readable(line: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (!rec || typeof rec !== 'object' || typeof rec['level'] !== 'number') return line;
  const time = typeof rec['time'] === 'number' ? new Date(rec['time']).toISOString().slice(11, 19) : '';
  const level = LEVELS[rec['level']] ?? String(rec['level']);
  const who = typeof rec['component'] === 'string' ? `${rec['component']}: ` : '';
  const fields = Object.entries(rec)
    .filter(([k]) => !LEAD.has(k))
    .map(([k, v]) => ` ${k}=${value(v)}`)
    .join('');
  return `${[time, level].filter(Boolean).join(' ')} ${who}${String(rec['msg'] ?? '')}${fields}`;
}

/** A pino destination that writes each JSON line it is given as humanLine says. */
export function humanStream(out: Sink): DestinationStream {
  return {
    write: (chunk: string) => {
      const lines = chunk.split('\n').filter((l) => l !== '');
      if (lines.length) out.write(`${lines.map(humanLine).join('\n')}\n`);
    },
  };
}

export interface TrialOutput {
  log: Logger;
  /** Says the trial runs, and what to try. */
  started(receiverUrl: string, node: string): void;
}

const SAMPLE = '@test/fixtures/alertmanager/kube-node-not-ready-resolved.json';
const explainCommand = (url: string): string => `curl -s -H 'Content-Type: application/json' '${url}/v1/explain?source=alertmanager' -d ${SAMPLE}`;

/** The trial's logger and start-up hint: readable lines at a terminal (`out.isTTY`), JSON lines otherwise. */
export function trialOutput(out: Sink = process.stdout, level = process.env['LOG_LEVEL']): TrialOutput {
  const human = out.isTTY === true;
  // JSON to the real stdout goes the way every process writes it (pino's own destination).
  const destination = human ? humanStream(out) : out === process.stdout ? undefined : (out as DestinationStream);
  const log = createLogger('dev', level, destination ? { destination } : {});
  const started = (url: string, node: string): void => {
    if (!human) {
      log.info({ receiver: url, node, mode: 'dry-run' }, `volume-medic is running. Try: ${explainCommand(url)}`);
      return;
    }
    out.write(
      [
        '',
        `volume-medic is running at ${url}, with a node agent for ${node}; every runbook in dry-run (nothing is changed).`,
        'Try, in another terminal:',
        `  ${explainCommand(url)}`,
        `  curl -s -H 'Content-Type: application/json' ${url}/v1/alertmanager -d ${SAMPLE}`,
        `  curl -s ${url}/v1/jobs`,
        `The on-call console: ${url}/ui/`,
        'Stop with Ctrl-C.',
        '',
        '',
      ].join('\n'),
    );
  };
  return { log, started };
}
