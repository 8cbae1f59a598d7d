import { z } from '../../zod.ts';
import { EVERY_PROCESS, section, setting } from '../setting.ts';

export const logging = section({
  title: 'Logging',
  doc: 'Every process logs JSON lines (pino) to stdout.',
  settings: {
    logLevel: setting({
      env: 'LOG_LEVEL',
      readers: EVERY_PROCESS,
      type: () => z._default(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
      doc: 'pino level.',
    }),
  },
});
