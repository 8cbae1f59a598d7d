import { ConfigError } from '../../core/config/load.ts';

/** No usable Kubernetes access: a ConfigError, so entry points exit 2 with the message, like any other bad setting. */
export class KubeConfigError extends ConfigError {
  override name = 'KubeConfigError';
}
