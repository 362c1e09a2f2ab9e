// OS-level input to a running session: mouse, keyboard, clipboard, goto, screenshot.
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { SessionLookup } from '../sessions/index.js';
import { inputHandlers, type InputHandlers } from './handlers.js';

export function input(d: { config: ServiceConfig; log: Logger; sessions: SessionLookup }): Capability<keyof InputHandlers> {
  return {
    name: 'input',
    handlers: inputHandlers({ sessions: d.sessions, log: d.log, allowPrivateNetworks: d.config.allowPrivateNetworks }),
  };
}
