import { APPROVAL_CAS } from '../controls/approval-store.ts';
import { AUDIT_APPEND } from '../controls/audit-append.ts';
import { AUDIT_MARKS_RAISE } from '../controls/audit-marks.ts';
import { BREAKER_RESERVE, BREAKER_STORM } from '../controls/breakers.ts';
import { WRITE_COPY } from '../controls/control-mirrors.ts';
import { CAS_FIELD, NEXT_GEN } from '../controls/control-scripts.ts';
import { AGENT_PRESENCE } from '../jobstore/agent-presence.ts';
import { bullmqScripts } from '../jobstore/bullmq-scripts.ts';
import type { LuaScript } from '../redis/lua-script.ts';
import { GENERATION_AT_ENROLMENT, GENERATION_NODE_DELETED, GENERATION_REVOKE } from '../redis/node-generations.ts';
import { READ_HASHES } from '../stats/job-stats.ts';

// Every Lua script a node agent or the cluster worker may run: BullMQ's (its worker, its queue's
// adds) and volume-medic's own in every module the agents import. Their Redis users may not EVAL
// (deploy/charts/volume-medic/files/users.acl.template), so they run these by EVALSHA only, and the
// receiver loads them on every server of the topology (src/adapters/redis/script-preload.ts).
// test/unit/repo/architecture/agent-scripts.test.ts fails when a module the agents import defines a
// script that is not here, or runs Lua any other way.

/** Our own scripts in modules the agents import (some only the receiver runs: loaded all the same). */
export const OWN_SCRIPTS: readonly LuaScript[] = [
  AUDIT_APPEND,
  AUDIT_MARKS_RAISE,
  APPROVAL_CAS,
  BREAKER_RESERVE,
  BREAKER_STORM,
  WRITE_COPY,
  NEXT_GEN,
  CAS_FIELD,
  AGENT_PRESENCE,
  READ_HASHES,
  GENERATION_AT_ENROLMENT,
  GENERATION_NODE_DELETED,
  GENERATION_REVOKE,
];

/** Every script the receiver loads for the agents, each once. */
export function agentScripts(): LuaScript[] {
  const bySha = new Map<string, LuaScript>();
  for (const s of [...bullmqScripts(), ...OWN_SCRIPTS]) if (!bySha.has(s.sha)) bySha.set(s.sha, s);
  return [...bySha.values()];
}
