/** A configuration that cannot be used: the process stops with exit 2 and this message, which names the setting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
