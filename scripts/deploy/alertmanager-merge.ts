import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { DEPLOY_DIR } from './chart.ts';

// Merges volume-medic's route and receiver (deploy/integrations/alertmanager.yaml) into an
// Alertmanager configuration so that every alert still reaches every receiver it reached
// before, plus volume-medic for the node-recovery alerts:
//   node scripts/deploy/alertmanager-merge.ts alertmanager.yml > merged.yml
// The volume-medic route goes first with `continue: true`; the previous child routes move one
// level down under a route to the root receiver. (Appending the route as a sibling instead loses
// the root receiver for those alerts whenever no other route matches: a matching child replaces
// its parent's receiver.) test/int/deploy/alertmanager-routes.int.test.ts checks this with amtool.

export const SNIPPET = join(DEPLOY_DIR, 'integrations/alertmanager.yaml');

type Route = Record<string, unknown> & { receiver?: string; routes?: Route[] };
type Config = Record<string, unknown> & { route?: Route; receivers?: Array<{ name: string }> };

export function mergeVolumeMedic(config: Config, snippet: Config = parseYaml(readFileSync(SNIPPET, 'utf8')) as Config): Config {
  const root = config.route;
  if (!root?.receiver) throw new Error('the configuration has no route.receiver (Alertmanager requires one)');
  const ours = snippet.route?.routes ?? [];
  const names = new Set((snippet.receivers ?? []).map((r) => r.name));
  if ((config.receivers ?? []).some((r) => names.has(r.name))) throw new Error(`a receiver named ${[...names].join(', ')} is already there: merged before?`);
  const { routes: previous, ...rootRest } = root;
  return {
    ...config,
    route: {
      ...rootRest,
      routes: [
        ...ours,
        // The previous tree, one level down: no matchers, so it matches every alert and routes it
        // exactly as the root did (it inherits the root's grouping and timing).
        { receiver: root.receiver, ...(previous && previous.length > 0 ? { routes: previous } : {}) },
      ],
    },
    receivers: [...(config.receivers ?? []), ...(snippet.receivers ?? [])],
  };
}

if (import.meta.main) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: node scripts/deploy/alertmanager-merge.ts <alertmanager.yml>  (prints the merged configuration)\n');
    process.exit(2);
  }
  process.stdout.write(stringify(mergeVolumeMedic(parseYaml(readFileSync(file, 'utf8')) as Config), { lineWidth: 0 }));
}
