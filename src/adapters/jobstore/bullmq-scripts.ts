import { RedisConnection } from 'bullmq';
import { luaScript, type LuaScript } from '../redis/lua-script.ts';
import { batchAddScript } from './batch-add.ts';

// Every Lua script BullMQ defines on a connection, as BullMQ defines it: its own loadCommands run
// against a recorder instead of a connection, so what is listed is what a Worker or Queue would
// run, whatever BullMQ version is installed (its scripts' names carry that version; their text
// is what Redis keys them by). Plus our batch add, which wraps BullMQ's addStandardJob.

interface Recorder {
  _client: { defineCommand(name: string, d: { lua: string; numberOfKeys?: number }): void };
}

/** BullMQ's scripts and the batch add of its add script (src/adapters/jobstore/batch-add.ts). */
export function bullmqScripts(): LuaScript[] {
  const out: LuaScript[] = [];
  const recorder: Recorder = { _client: { defineCommand: (name, d) => out.push(luaScript(name, d.lua, d.numberOfKeys)) } };
  const load = (RedisConnection.prototype as unknown as { loadCommands(this: Recorder, version: string): void }).loadCommands;
  load.call(recorder, 'listed');
  if (out.length === 0) throw new Error('BullMQ defined no scripts: its loadCommands changed');
  const add = out.find((s) => s.name.startsWith('addStandardJob:'));
  if (!add) throw new Error('BullMQ has no addStandardJob script: the batch add (batch-add.ts) cannot wrap it');
  return [...out, batchAddScript(add.name, add.lua)];
}
