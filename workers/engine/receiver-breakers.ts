import { readFileSync } from 'node:fs';
import type { Agent } from 'node:http';
import {
  ActivityAnswer,
  BREAKER_SEAL_TTL_MS,
  BREAKER_SLOTS_PATH,
  ReserveAnswer,
  breakerSubject,
  type BreakerAsk,
} from '../../src/core/controls/breaker-wire.ts';
import type { BreakerCaps, BreakerPort, Reservation } from '../../src/adapters/controls/breakers.ts';
import type { TripRecord } from '../../src/core/controls/records.ts';
import type { Sealer } from '../../src/core/trust/seal.ts';
import { RelayPart, type RelayedControls } from '../../src/core/controls/control-relay.ts';
import { postToReceiver } from './receiver-http.ts';

// An enrolled node agent's breakers: the receiver takes the slot and counts the start, as its own
// Redis user, for the node the request's seal proves (src/core/controls/breaker-wire.ts); this node's
// own Redis user may not write the breakers' keys. Every failure throws (the gate then parks the
// job: no slot is not a slot), with what failed and never a key. Every answer may also carry the
// newest sealed mode and pause records the receiver knows of this node's fields
// (src/core/controls/control-relay.ts): handed to the relay listener (the job controls' store)
// before the ask resolves, so the caller opens what it read from Redis against them.

export interface ReceiverBreakersOptions {
  /** The receiver (ENROL_URL). */
  url: string;
  /** Its CA (ENROL_CA_FILE). */
  caFile?: string;
  /** This node's queue and the sealer of its work key (from enrolment). */
  queue: string;
  sealer: Sealer;
  timeoutMs?: number;
  /** The connections to the receiver (receiverAgent); default this process's, which its enrolment used too. */
  agent?: Agent;
}

export class ReceiverBreakers implements BreakerPort {
  readonly #o: ReceiverBreakersOptions;
  readonly #url: URL;
  readonly #ca: Buffer | undefined;
  #onRelay: ((relay: RelayedControls) => void) | undefined;

  constructor(o: ReceiverBreakersOptions) {
    this.#o = o;
    this.#url = new URL(BREAKER_SLOTS_PATH, o.url);
    this.#ca = o.caFile ? readFileSync(o.caFile) : undefined;
  }

  /** Who takes the records the receiver relays (one listener: the job controls of this agent). */
  onRelay(listener: (relay: RelayedControls) => void): void {
    this.#onRelay = listener;
  }

  /** The caps are the receiver's (an agent cannot lift them); `caps` is the port's shape only. */
  async reserveDestructive(_caps: BreakerCaps, what: { node?: string; jobId: string; stepId: string }): Promise<Reservation> {
    if (!what.node) throw new Error('the receiver takes breaker slots for a node agent only');
    return ReserveAnswer.parse(await this.#ask({ op: 'reserve', node: what.node, jobId: what.jobId, stepId: what.stepId }));
  }

  async recordNodeActivity(_caps: BreakerCaps, node: string, source?: string): Promise<TripRecord | undefined> {
    return ActivityAnswer.parse(await this.#ask({ op: 'activity', node, ...(source ? { source: source.slice(0, 40) } : {}) })).tripped;
  }

  async #ask(ask: BreakerAsk): Promise<unknown> {
    const seal = this.#o.sealer.workFor
      ? this.#o.sealer.workFor(this.#o.queue).seal('breaker', breakerSubject(this.#o.queue), ask, BREAKER_SEAL_TTL_MS)
      : undefined;
    if (!seal) throw new Error("no work key of this node's queue to seal the request with (not enrolled?)");
    const answer = await postToReceiver({
      url: this.#url,
      body: JSON.stringify({ ask, seal }),
      ...(this.#ca ? { ca: this.#ca } : {}),
      ...(this.#o.agent ? { agent: this.#o.agent } : {}),
      timeoutMs: this.#o.timeoutMs ?? 5_000,
      // Room for the relayed records (control-relay.ts: at most 11 of 8 KiB, escaped) besides the breaker answer.
      maxBytes: 256 * 1024,
    }).catch((err: Error) => {
      throw new Error(`the receiver's breakers at ${this.#url.origin} did not answer: ${err.message}`);
    });
    let json: unknown;
    try {
      json = JSON.parse(answer.text);
    } catch {
      throw new Error(`the receiver's breakers answered HTTP ${answer.status}, not JSON`);
    }
    if (answer.status !== 200) {
      const why = typeof (json as { error?: unknown })?.error === 'string' ? (json as { error: string }).error.slice(0, 300) : 'no reason given';
      throw new Error(`the receiver's breakers refused: HTTP ${answer.status}: ${why}`);
    }
    // A relay that does not parse is dropped (the breaker answer still counts): nothing learnt, as without one.
    const relay = RelayPart.safeParse(json);
    if (relay.success && relay.data.controls) this.#onRelay?.(relay.data.controls);
    return json;
  }
}
