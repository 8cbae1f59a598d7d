import { readFileSync } from 'node:fs';
import { ENROL_PATH, EnrolAnswer, type EnrolRequest } from '../../src/core/trust/enrolment-wire.ts';
import type { Agent } from 'node:http';
import { postToReceiver } from './receiver-http.ts';

// One enrolment round trip: POST /v1/enrol to the receiver with the pod's projected token (read
// again each time: the kubelet rotates it), the receiver's CA when given, a deadline, and the
// answer parsed before anything of it is used. Errors say what failed, never what the token or
// the keys are.

export interface EnrolTarget {
  url: string;
  tokenFile: string;
  caFile?: string;
  timeoutMs?: number;
  /** The connections to the receiver (receiverAgent); default this process's. */
  agent?: Agent;
}

export class EnrolError extends Error {
  override name = 'EnrolError';
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

const MAX_ANSWER_BYTES = 64 * 1024;

export async function enrolOnce(t: EnrolTarget, req: EnrolRequest): Promise<EnrolAnswer> {
  let token: string;
  try {
    token = readFileSync(t.tokenFile, 'utf8').trim();
  } catch (err) {
    throw new EnrolError(
      `ENROL_TOKEN_FILE ${t.tokenFile}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'} (the chart mounts a projected service-account token there)`,
    );
  }
  const url = new URL(ENROL_PATH, t.url);
  const ca = t.caFile ? readFileSync(t.caFile) : undefined;
  const body = JSON.stringify(req);
  const timeoutMs = t.timeoutMs ?? 10_000;
  const text = await postToReceiver({
    url,
    body,
    headers: { authorization: `Bearer ${token}` },
    ...(ca ? { ca } : {}),
    ...(t.agent ? { agent: t.agent } : {}),
    timeoutMs,
    maxBytes: MAX_ANSWER_BYTES,
  }).catch((err: Error) => {
    throw new EnrolError(`enrolment at ${url.origin} failed: ${err.message}`);
  });
  let json: unknown;
  try {
    json = JSON.parse(text.text);
  } catch {
    throw new EnrolError(`enrolment at ${url.origin}: HTTP ${text.status}, not JSON`, text.status);
  }
  if (text.status !== 200) {
    const error = typeof (json as { error?: unknown })?.error === 'string' ? (json as { error: string }).error.slice(0, 300) : 'no reason given';
    throw new EnrolError(`enrolment at ${url.origin} refused: HTTP ${text.status}: ${error}`, text.status);
  }
  const answer = EnrolAnswer.safeParse(json);
  if (!answer.success) throw new EnrolError(`enrolment at ${url.origin}: the answer does not parse: ${answer.error.issues[0]?.message ?? 'invalid'}`);
  return answer.data;
}
