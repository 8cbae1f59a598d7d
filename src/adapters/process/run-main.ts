import { ConfigError, loadConfig } from '../../core/config/load.ts';
import type { ConfigOf } from '../../core/config/schema.ts';
import type { ConfigProcess } from '../../core/config/setting.ts';
import type { Logger } from '../observability/logger.ts';

// The shape every entry point shares: load and validate its process's configuration (a bad value
// exits 2 with a message naming it; other processes' settings are not read), start, and on
// SIGTERM/SIGINT close in order and exit.

export interface Closeable {
  close(): Promise<void>;
}

export async function runMain<P extends ConfigProcess>(which: P, log: Logger, start: (config: ConfigOf<P>) => Promise<Closeable> | Closeable): Promise<void> {
  try {
    const config = loadConfig(which);
    log.level = config.logLevel;
    // The handlers go in before start: a SIGTERM while starting (a pod deleted at once, a probe
    // port already announced) waits for the start to finish, then closes it; without them Node's
    // default ends the process by the signal, half started.
    const started = Promise.resolve().then(() => start(config));
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      process.once(sig, () => {
        log.info({ signal: sig }, 'shutting down');
        void started
          .then((running) => running.close())
          .then(
            () => process.exit(0),
            (err: unknown) => {
              log.error({ err }, 'error while shutting down');
              process.exit(1);
            },
          );
      });
    }
    await started;
  } catch (err) {
    if (err instanceof ConfigError) {
      log.fatal(err.message);
      process.exit(2);
    }
    // Through the logger, not Node's uncaught-error print: its lines hide URL credentials.
    log.fatal({ err }, 'failed to start');
    process.exit(1);
  }
}
