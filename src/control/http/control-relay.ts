import type { Logger } from '../../adapters/observability/logger.ts';
import type { RelayedControls } from '../../core/controls/control-relay.ts';

// The receiver's half of the control relay (src/core/controls/control-relay.ts) in its answers to
// an enrolled agent's breaker asks. The records come from this process's own read of the sealed
// modes and pauses at the time of the ask (ControlsStore.newestRecords), never a cache: a relay
// must not be older than this replica's knowledge. A failed read relays nothing, which leaves the
// agent as it stood without a relay (the breaker answer itself still counts).

/** What answers a node's ask: the newest records of its fields, read now. */
export type ControlRelay = (node: string) => Promise<RelayedControls>;

/** The relay as part of an answer (`{ controls }`, or nothing); never rejects. */
export function relayPart(relay: ControlRelay | undefined, node: string, log: Logger): Promise<{ controls?: RelayedControls }> {
  if (!relay) return Promise.resolve({});
  return relay(node).then(
    (controls) => (Object.keys(controls).length > 0 ? { controls } : {}),
    (err: Error) => {
      log.warn({ node, err: err.message }, "could not read the controls to relay to a node's agent; answered without them");
      return {};
    },
  );
}
