// Structured logs (pino). Keys and tokens never reach them: the redaction list is the
// last line of defence, the first is not logging headers or query strings at all.
import pino, { type DestinationStream, type Logger } from 'pino';
import { API_KEY_HEADERS } from './auth/key-header.js';
import type { LogLevel } from './config/config.js';

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'cloud-browser' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [...API_KEY_HEADERS.map((h) => `*.headers["${h}"]`), 'apiKey', 'key', 'token', 'secret', 'password', '*.password', '*.secret', '*.token'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
