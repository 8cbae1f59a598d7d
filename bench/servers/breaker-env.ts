// The breakers' caps a bench process takes from its environment (BREAKER_*, as the chart sets them):
// bench/soak.ts turns them off in every process, bench/fleet-paths.ts for its destructive steps.
const BREAKER_SETTINGS = [
  ['BREAKER_STORM_NODES', 'breakerStormNodes'],
  ['BREAKER_NODE_DESTRUCTIVE_PER_HOUR', 'breakerNodeDestructivePerHour'],
  ['BREAKER_CLUSTER_DESTRUCTIVE_PER_HOUR', 'breakerClusterDestructivePerHour'],
] as const;

/** The configuration keys of the BREAKER_* variables set in this process's environment. */
export const breakerSettingsFromEnv = (): Record<string, string> =>
  Object.fromEntries(BREAKER_SETTINGS.flatMap(([env, key]) => (process.env[env] === undefined ? [] : [[key, process.env[env]!]])));
