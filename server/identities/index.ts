// Identities: managed authentication into third-party web apps. Applications and their
// authentication flows (application-handlers.ts), identities with sealed credentials
// (identity-handlers.ts, credentials.ts), what a login is (flows.ts) and how it runs in a
// session's browser (login.ts), and the sessions created with identities (sign-in.ts),
// whose signed-in state is kept as the identity's profile through the profiles capability.
import type { Logger } from 'pino';
import type { LoginAgent } from '../agent/index.js';
import type { Capability, Signals } from '../capability/index.js';
import type { Interventions } from '../interventions/index.js';
import type { ProfileService } from '../profiles/index.js';
import type { Secrets } from '../secrets/index.js';
import type { SessionLifecycle, SessionLookup } from '../sessions/index.js';
import type { BlobAreas } from '../storage/blobs.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import { applicationHandlers, type ApplicationOperation } from './application-handlers.js';
import { identityHandlers, type IdentityOperation } from './identity-handlers.js';
import { LoginScreenshots } from './screenshots.js';
import { IdentitySignIn, profileNameOf } from './sign-in.js';
import { failInterrupted } from './store.js';
import { connectRoutes, tokenHandlers, type TokenOperation } from './tokens.js';

export function identities(d: {
  db: Db;
  log: Logger;
  secrets: Secrets;
  blobs: BlobAreas;
  config: ServiceConfig;
  sessions: SessionLookup & SessionLifecycle;
  profiles: ProfileService;
  interventions: Interventions;
  /** The agent a login hands a page its rules do not understand; undefined without a model. */
  loginAgent: LoginAgent | undefined;
  /** Told: a login's event written. */
  signals: Pick<Signals, 'deliveriesWritten'>;
}): Capability<ApplicationOperation | IdentityOperation | TokenOperation> {
  const screenshots = new LoginScreenshots(d.blobs('login-screenshots'));
  const signIn = new IdentitySignIn({
    screenshots,
    publicUrl: d.config.publicUrl,
    db: d.db,
    secrets: d.secrets,
    profiles: d.profiles,
    interventions: d.interventions,
    loginAgent: d.loginAgent,
    log: d.log,
    signals: d.signals,
    running: (sessionId) => d.sessions.get(sessionId) !== undefined,
  });
  return {
    name: 'identities',
    handlers: {
      ...applicationHandlers({ db: d.db }),
      ...tokenHandlers({ db: d.db }),
      ...identityHandlers({
        db: d.db,
        secrets: d.secrets,
        async signInNow(owner, identityId) {
          // A session of its own, not recorded on video, ended once the login ran: its end
          // saves the signed-in state as the identity's profile.
          const made = await d.sessions.create(owner, { identities: [{ id: identityId }], session: { recording: { active: false } } }, { internal: true });
          if (!made.ok) return made.message;
          await d.sessions.end(made.id, 'completed', 'api');
          return undefined;
        },
        forgetState: async (projectId, identityId) => {
          await screenshots.forget(projectId, identityId);
          await d.profiles.remove(projectId, profileNameOf(identityId));
        },
        screenshots,
      }),
    },
    // The page an identity token opens: {PUBLIC_URL}/connect/{token}.
    routes: (app) => connectRoutes(app, { db: d.db, secrets: d.secrets }),
    sessionHooks: signIn,
    async start() {
      const corrected = await failInterrupted(d.db);
      if (corrected > 0) d.log.warn({ sessions: corrected }, 'logins interrupted by a previous run marked failed');
    },
    close: () => signIn.close(),
  };
}
