// The captcha solver in sessions (`browser.captcha_solver`): the pages of a session that asks
// for it get the bot-detection challenge and captcha passing of the web fetch tool
// (page/challenges.ts; reCAPTCHA, hCaptcha and Turnstile through the captcha-solving service
// the operator configures, CAPTCHA_SERVICE_URL), followed over a CDP connection of the
// server's own (watcher.ts). Sessions without the option are not touched at all.
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { configuredCaptchaService } from '../page/captcha-adapter.js';
import { ChallengeWatch } from './watcher.js';

export function sessionCaptcha(d: { config: ServiceConfig; log: Logger }): Capability {
  const solver = configuredCaptchaService(d.config);
  const watches = new Map<string, ChallengeWatch>();
  const stop = (id: string) => {
    watches.get(id)?.stop();
    watches.delete(id);
  };
  return {
    name: 'session-captcha',
    sessionHooks: {
      started: async (s) => {
        if (!s.options.captchaSolver) return;
        watches.set(s.id, await ChallengeWatch.start(s, { solver, log: d.log }));
      },
      ending: async (s) => stop(s.id),
      // A session ended while its watch was being set up.
      ended: async (s) => stop(s.id),
    },
  };
}
