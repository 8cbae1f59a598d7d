#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ApiError, apiClient } from './api-client.ts';
import { operatorToken } from './operator-token.ts';
import { terminalSafe } from './terminal-safe.ts';
import { redactUrlsIn } from '../../core/config/redact-url.ts';
import { type Opts, UsageError } from './command-kit.ts';
import { approvals, breakers, decide, explain, fleet, jobs, modes, pause, retry, revoke } from './commands.ts';
import { placeholders, prepareUninstall, uninstallCheck } from './placeholder-commands.ts';
import { job, show } from './job-commands.ts';
import { redisBudget } from './redis-budget-command.ts';

// `volume-medic`: the operator's command line, against the receiver's API.
// URL: --url, else VOLUME_MEDIC_URL, else http://127.0.0.1:8080. Who you are is your Kubernetes
// identity: --token, else VOLUME_MEDIC_OPERATOR_TOKEN, else your kubeconfig's current user
// (operator-token.ts); the receiver checks it (TokenReview) and records that user name, and
// cluster RBAC decides what you may do. Exit codes: 0 done, 1 the API said no (or could not be
// reached; prepare-uninstall and uninstall-check: placeholders remain), 2 bad usage.

const USAGE = `usage: volume-medic [--url URL] [--token TOKEN] [--json] <command>

commands:
  explain <file> [--source alertmanager|events|npd]   what a webhook payload would do (stores nothing)
  jobs [--node N] [--state S] [--runbook R] [--limit N]  recent jobs, newest first
  fleet [--all] [--sort S] [--limit N]                nodes with open jobs (--all: every node): agent seen,
                                                      missing or idle, queue depth, parked, failed, breaker
                                                      and pause; S: open depth active parked failed agent
                                                      breaker node
  job <id>                                            one job: mode, outcome, plan, steps, commands, log
  show <id>                                           the incident as the console shows it: signal, every
                                                      step's evidence and verdicts, the argv it would run or
                                                      ran (with output), approval, audit trail
  approvals                                           jobs waiting for approval
  approve <id> [--why TEXT]                           let a job's high-risk steps run
  reject <id> --why TEXT                              refuse them (the job fails, nothing runs)
  retry <id> --why TEXT                               run a failed job again (a new job, sealed afresh)
  pause [--node N | --runbook R] [--why TEXT]        hold jobs cluster-wide, on one node, or of one runbook
  resume [--node N | --runbook R] [--why TEXT]       release them
  breakers                                            blast-radius breakers: counts, caps, trips
  breakers reset <cluster|storm|node/NAME> [--why T]  close a tripped breaker
  redis-budget                                        nodes whose Redis user may only read (over their memory budget)
  redis-budget release <node> --why TEXT              let such a node write again
  modes                                               configured modes and API overrides
  modes set <runbook/NAME|node/NAME> <dry-run|enforce|default> [--why T]
  placeholders                                        Local PV placeholders the node agents report attached:
                                                      node, PV, path, loop device, since, disk back, held by
  placeholders release <pv> --node N --path P --force --why TEXT
                                                      detach a Local PV placeholder WITHOUT checking
                                                      that its disk is back (replaced, or not returning)
  prepare-uninstall [--force --why TEXT]              before helm uninstall: asks for the release of every
                                                      placeholder whose disk is back and that nothing holds
                                                      (--force: also those whose disk is not back), says
                                                      what blocks the rest; exit 1 while any is attached
  uninstall-check [--allow-stranded] [--arm-host-state-removal]
                                                      the chart's pre-delete check: exit 1 naming each
                                                      attached placeholder (--allow-stranded: warn, exit 0);
                                                      once it passes, --arm-host-state-removal marks the
                                                      node queues so agents remove their host state
  revoke <node> [--why TEXT]                          revoke a node's credentials: its Redis password and
                                                      work keys stop working at once, its agent enrols
                                                      again for new ones (a repeat changes nothing)

options: --token TOKEN (a Kubernetes token; default: VOLUME_MEDIC_OPERATOR_TOKEN, else your kubeconfig's
         current user), --token-file FILE (the token read from a file), --json (raw API answer)
env: VOLUME_MEDIC_URL, VOLUME_MEDIC_OPERATOR_TOKEN, KUBECONFIG, NODE_EXTRA_CA_CERTS (the CA of the receiver's
     HTTPS certificate: the chart's ConfigMap volume-medic-receiver-ca, key ca.crt)
You are recorded as the user your token belongs to; RBAC on volume-medic.io decides what you may do.`;

/** The command line's flags (node:util parseArgs; unknown flags throw). */
const parseCliArgs = (args: string[]) =>
  parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      'token-file': { type: 'string' },
      json: { type: 'boolean', default: false },
      why: { type: 'string' },
      node: { type: 'string' },
      state: { type: 'string' },
      runbook: { type: 'string' },
      limit: { type: 'string' },
      source: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      path: { type: 'string' },
      force: { type: 'boolean', default: false },
      all: { type: 'boolean', default: false },
      sort: { type: 'string' },
      'allow-stranded': { type: 'boolean', default: false },
      'arm-host-state-removal': { type: 'boolean', default: false },
    },
  });

// long because: one short case per subcommand
export async function run(argv: string[], env: NodeJS.ProcessEnv, rawOut: (s: string) => void, rawErr: (s: string) => void): Promise<number> {
  // Every line printed, to stdout and stderr, may carry API data: no terminal control characters.
  const out = (s: string): void => rawOut(terminalSafe(s));
  const err = (s: string): void => rawErr(terminalSafe(redactUrlsIn(s)));
  let parsed: ReturnType<typeof parseCliArgs>;
  try {
    parsed = parseCliArgs(argv);
  } catch (e) {
    err(`${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const {
    values: v,
    positionals: [cmd, ...args],
  } = parsed;
  if (v.help || !cmd) {
    (v.help ? out : err)(USAGE);
    return v.help ? 0 : 2;
  }
  const url = v.url ?? env['VOLUME_MEDIC_URL'] ?? 'http://127.0.0.1:8080';
  // --token-file: a projected service-account token in a pod (the chart's pre-delete check), read as it is now.
  const source = await operatorToken(v['token-file'] ? (await readFile(v['token-file'], 'utf8')).trim() : v.token, env);
  const api = apiClient(url, source.token, source.from);
  const o: Opts = {
    json: v.json ?? false,
    ...(v.why !== undefined ? { why: v.why } : {}),
    ...(v.node !== undefined ? { node: v.node } : {}),
    ...(v.state !== undefined ? { state: v.state } : {}),
    ...(v.runbook !== undefined ? { runbook: v.runbook } : {}),
    ...(v.limit !== undefined ? { limit: v.limit } : {}),
    ...(v.source !== undefined ? { source: v.source } : {}),
    ...(v.path !== undefined ? { path: v.path } : {}),
    force: v.force ?? false,
    all: v.all ?? false,
    ...(v.sort !== undefined ? { sort: v.sort } : {}),
  };
  const need = (what: string): string => {
    if (!args[0]) throw new UsageError(`${cmd} ${what}`);
    return args[0];
  };
  try {
    switch (cmd) {
      case 'explain':
        await explain(api, need('<file>'), o, out);
        break;
      case 'jobs':
        await jobs(api, o, out);
        break;
      case 'fleet':
        await fleet(api, o, out);
        break;
      case 'job':
        await job(api, need('<id>'), o, out);
        break;
      case 'show':
        await show(api, need('<id>'), o, out);
        break;
      case 'approvals':
        await approvals(api, o, out);
        break;
      case 'approve':
      case 'reject':
        await decide(api, cmd, need('<id>'), o, out);
        break;
      case 'retry':
        await retry(api, need('<id>'), o, out);
        break;
      case 'pause':
      case 'resume':
        await pause(api, cmd, o, out);
        break;
      case 'breakers':
        await breakers(api, args, o, out);
        break;
      case 'modes':
        await modes(api, args, o, out);
        break;
      case 'redis-budget':
        await redisBudget(api, args, o, out);
        break;
      case 'placeholders':
        await placeholders(api, args, o, out);
        break;
      case 'prepare-uninstall':
        return await prepareUninstall(api, o, out);
      case 'uninstall-check':
        return await uninstallCheck(api, { ...o, allowStranded: v['allow-stranded'] ?? false, armHostStateRemoval: v['arm-host-state-removal'] ?? false }, out);
      case 'revoke':
        await revoke(api, need('<node>'), o, out);
        break;
      default:
        throw new UsageError(`unknown command ${cmd}`);
    }
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      err(`usage: volume-medic ${e.message}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof ApiError) {
      err(`volume-medic: ${e.message}`);
      return 1;
    }
    err(`volume-medic: ${(e as Error).message}`);
    return 1;
  }
}

if (import.meta.main) {
  process.exitCode = await run(
    process.argv.slice(2),
    process.env,
    (s) => process.stdout.write(`${s}\n`),
    (s) => process.stderr.write(`${s}\n`),
  );
}
