import { accessSync, constants } from 'node:fs';

/** Whether `path` is a file this process may execute (a tool a test needs: amtool, promtool, Alertmanager). */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
