// Structured logs (pino). Keys and tokens never reach them: the redaction list is the
// last line of defence, the first is not logging headers or query strings at all.
import pino, { type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config/config.js';

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
    level,
    base: { service: 'cloud-browser' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['*.headers["service-api-key"]', 'apiKey', 'key', 'token', 'secret', 'password', '*.password', '*.secret', '*.token'],
      censor: '[redacted]',
    },
  },
    destination,
  );
}
