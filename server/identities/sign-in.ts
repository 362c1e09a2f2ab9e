// Identities in sessions. `check` refuses unknown identities; `launching` loads the saved
// profile of an active identity into the new browser; `started` runs the logins of the
// others (before the session is answered, or after it with `authenticate_in_background`)
// and checks a reused one when asked. A login that succeeds keeps the session's state as
// the identity's profile (saved when the session ends, by the profiles capability) and
// makes the identity active; either outcome fires its event, in the transaction that
// records it, and shows on the session record.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { LaunchAddition, LaunchingSession, RunningSession, SessionHooks, SessionOptions } from '../capability/index.js';
import { emitEvent, type EmitSignals } from '../outbox/emit.js';
import type { LoginAgent } from '../agent/index.js';
import type { Interventions } from '../interventions/index.js';
import type { ProfileService } from '../profiles/index.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import { openCredentials, type SealedCredentials } from './credentials.js';
import { planLogin, type LoginPlan } from './flows.js';
import { runAutoLogin } from './auto-login.js';
import { runLogin, stillSignedIn, type AskHuman, type LoginOutcome } from './login.js';
import type { LoginScreenshots } from './screenshots.js';
import * as store from './store.js';

/** How long a person may take to answer a background login's intervention. */
const HUMAN_WAIT_MS = 10 * 60_000;

/** The profile that keeps an identity's signed-in state. */
export const profileNameOf = (identityId: string) => `identity-${identityId}`;

/** What showProgress wrote: the identities found, and the progress shown for each. */
interface Shown {
  rows: store.IdentityRow[];
  progress: store.SessionIdentityProgress[];
}

export class IdentitySignIn implements SessionHooks {
  /** The identity whose saved profile a launching session got, by session id, until its logins start. */
  private readonly loaded = new Map<string, string>();
  /** Logins running after their session was answered: shutdown waits for them. */
  private readonly background = new Set<Promise<void>>();

  constructor(
    private readonly d: {
      db: Db;
      secrets: Secrets;
      profiles: ProfileService;
      interventions: Interventions;
      loginAgent: LoginAgent | undefined;
      log: Logger;
      signals: EmitSignals;
      screenshots: LoginScreenshots;
      publicUrl: string;
      /** Whether the session is still running (not ending): only then can its state still be kept. */
      running(sessionId: string): boolean;
    },
  ) {}

  async check(projectId: string, options: SessionOptions): Promise<string | undefined> {
    const ids = options.identities.ids;
    if (ids.length === 0) return undefined;
    if (options.profile) {
      return 'browser.profile cannot be combined with identities: an identity keeps its signed-in state in a profile of its own';
    }
    const found = new Set((await store.findIdentities(this.d.db, projectId, ids)).map((r) => r.id));
    const unknown = ids.find((id) => !found.has(id));
    return unknown ? `Unknown identity: ${unknown}` : undefined;
  }

  /** An active identity with a saved state loads it at launch: a browser of its own. A pending one signs in in a warm browser. */
  async coldLaunch(projectId: string, options: SessionOptions): Promise<boolean> {
    for (const row of await store.findIdentities(this.d.db, projectId, options.identities.ids)) {
      if (row.status === 'active' && (await this.d.profiles.isReady(projectId, profileNameOf(row.id)))) return true;
    }
    return false;
  }

  async launching(s: LaunchingSession): Promise<LaunchAddition | undefined> {
    const rows = await this.rowsInOrder(s.projectId, s.options.identities.ids);
    // One user-data directory a browser: the first active identity with a saved state
    // brings it; the others sign in within the session.
    for (const row of rows) {
      if (row.status !== 'active') continue;
      if (await this.d.profiles.loadInto(s, profileNameOf(row.id))) {
        this.loaded.set(s.id, row.id);
        return { userData: true };
      }
    }
    return undefined;
  }

  async started(s: RunningSession): Promise<void> {
    if (s.options.identities.ids.length === 0) return;
    // The progress is on the session's record before the session is answered, even when the
    // login itself runs in the background.
    let shown: Shown;
    try {
      shown = await this.showProgress(s);
    } catch (err) {
      this.d.log.error({ sessionId: s.id, err }, 'identity sign-in failed');
      return;
    }
    const work = this.signInAll(s, shown).catch((err: unknown) => this.d.log.error({ sessionId: s.id, err }, 'identity sign-in failed'));
    if (!s.options.identities.inBackground) return work;
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  /**
   * Shutdown, after every session has ended (so a background login still running fails at
   * once, its browser gone): wait for what it records.
   */
  async close(): Promise<void> {
    await Promise.all(this.background);
  }

  private async rowsInOrder(projectId: string, ids: string[]): Promise<store.IdentityRow[]> {
    const rows = await store.findIdentities(this.d.db, projectId, ids);
    return ids.map((id) => rows.find((r) => r.id === id)).filter((r): r is store.IdentityRow => r !== undefined);
  }

  /** Each identity's progress, `authenticating` (or failed when deleted since the check), written on the session's record. */
  private async showProgress(s: RunningSession): Promise<Shown> {
    const rows = await this.rowsInOrder(s.projectId, s.options.identities.ids);
    // Deleted since the session's check: nothing to sign in with.
    const progress: store.SessionIdentityProgress[] = s.options.identities.ids.map((id) =>
      rows.some((r) => r.id === id)
        ? { id, status: 'authenticating' }
        : { id, status: 'failed', failure_type: 'automation_failure', error_message: 'The identity was deleted' },
    );
    await store.setSessionProgress(this.d.db, s.id, progress);
    return { rows, progress };
  }

  private async signInAll(s: RunningSession, { rows, progress }: Shown): Promise<void> {
    const loadedId = this.loaded.get(s.id);
    this.loaded.delete(s.id);
    const mark = (id: string, p: Omit<store.SessionIdentityProgress, 'id'>) => {
      const i = progress.findIndex((x) => x.id === id);
      progress[i] = { id, ...p };
      return store.setSessionProgress(this.d.db, s.id, progress);
    };

    let browser: Browser | undefined;
    try {
      browser = await chromium.connectOverCDP(s.browser.wsEndpoint, { timeout: 15_000 });
      const context = browser.contexts()[0] ?? (await browser.newContext());
      const page = context.pages()[0] ?? (await context.newPage());
      /** The page moved: a login ran, or a saved profile was checked. */
      let moved = false;
      for (const row of rows) {
        const plan = await this.plan(row);
        if (row.id === loadedId) {
          if (!s.options.identities.skipProfileValidation) moved = true;
          if (s.options.identities.skipProfileValidation || (await stillSignedIn(page, plan))) {
            await mark(row.id, { status: 'reused' });
            continue;
          }
          this.d.log.info({ sessionId: s.id, identityId: row.id }, 'saved identity profile is signed out: signing in again');
        }
        const executionId = randomUUID();
        const outcome = await this.login(s, page, plan, row);
        await this.record(s, row, executionId, outcome);
        await mark(
          row.id,
          outcome.ok
            ? { status: 'authenticated', execution_id: executionId }
            : {
                status: 'failed',
                execution_id: executionId,
                failure_type: outcome.failureType,
                ...(outcome.reason ? { failure_reason: outcome.reason } : {}),
                ...(outcome.screenshot ? { screenshot_url: `${this.d.publicUrl}/v1/identities/${row.id}/login-screenshot` } : {}),
                error_message: outcome.message,
              },
        );
        moved = true;
      }
      // The page the session was asked to open, now signed in; without one, the page the
      // login ended on.
      if (moved && s.options.initialUrl) await page.goto(s.options.initialUrl).catch(() => {});
    } catch (err) {
      // The browser went away (the session ended) or Playwright could not attach: what had
      // not finished fails.
      const message = `The login could not run: ${String((err as Error).message ?? err).split('\n')[0]}`;
      for (const p of progress.filter((x) => x.status === 'authenticating')) {
        const row = rows.find((r) => r.id === p.id);
        const executionId = randomUUID();
        if (row) await this.record(s, row, executionId, { ok: false, failureType: 'automation_failure', message });
        await mark(p.id, { status: 'failed', execution_id: executionId, failure_type: 'automation_failure', error_message: message });
      }
    } finally {
      // Disconnects Playwright; the browser stays with its session.
      await browser?.close().catch(() => {});
    }
  }

  private async plan(row: store.IdentityRow): Promise<LoginPlan> {
    const app = (await store.getApplication(this.d.db, row.project_id, row.application_id))!;
    const flows = await store.listAuthFlows(this.d.db, row.project_id, app.id);
    const flow = flows.find((f) => f.id === row.auth_flow_id) ?? flows.find((f) => f.is_recommended) ?? flows[0];
    return planLogin(app, flow, methodsOf(row.credentials));
  }

  private async login(s: RunningSession, page: Page, plan: LoginPlan, row: store.IdentityRow): Promise<LoginOutcome> {
    let creds;
    try {
      creds = openCredentials(this.d.secrets, row.id, row.credentials);
    } catch {
      return { ok: false, failureType: 'automation_failure', message: "The identity's credentials could not be opened (sealed under another key?)" };
    }
    // A person gets the flow's own time while the session's answer waits, ten minutes once it
    // has been answered (the login runs in the background).
    const ask: AskHuman = (message, inputType) =>
      this.d.interventions.ask(s, { message, inputType, timeoutMs: s.options.identities.inBackground ? HUMAN_WAIT_MS : plan.timeoutMs });
    const outcome = plan.auto
      ? await runAutoLogin(page, plan, creds, ask, {
          captchaSolver: s.options.captchaSolver,
          agent: this.d.loginAgent,
          log: this.d.log.child({ sessionId: s.id, identityId: row.id }),
        })
      : await runLogin(page, plan, creds, ask);
    if (outcome.ok) return outcome;
    if (outcome.screenshot) {
      await this.d.screenshots.keep(s.projectId, row.id, outcome.screenshot).catch((err: unknown) => {
        this.d.log.warn({ sessionId: s.id, identityId: row.id, err }, 'the screenshot of a failed login could not be kept');
        delete outcome.screenshot;
      });
    }
    // A site may echo what was typed into its error text: never into a record, event or log.
    let message = outcome.message;
    for (const secret of [creds.username, creds.password, creds.totpSecret, ...Object.values(creds.custom)]) {
      if (secret && secret.length >= 3) message = message.split(secret).join('[redacted]');
    }
    return { ...outcome, message };
  }

  /** The outcome on the identity and its event, together; a success also keeps the session's state as the identity's profile. */
  private async record(s: RunningSession, row: store.IdentityRow, executionId: string, outcome: LoginOutcome): Promise<void> {
    // A session that began to end meanwhile has had its state saved (or not) already.
    if (outcome.ok && this.d.running(s.id)) await this.d.profiles.keepAtEnd(s, profileNameOf(row.id));
    await this.d.db.transaction(async (tx) => {
      if (outcome.ok) {
        if (!(await store.setOutcome(tx, row.id, { status: 'active' }))) return;
        await emitEvent(tx, this.d.signals, s.projectId, 'identity.authenticated', {
          identity_id: row.id,
          application_id: row.application_id,
          session_id: s.id,
          execution_id: executionId,
        });
      } else {
        if (!(await store.setOutcome(tx, row.id, { status: 'failed', failureType: outcome.failureType, message: outcome.message }))) return;
        await emitEvent(tx, this.d.signals, s.projectId, 'identity.authentication_failed', {
          identity_id: row.id,
          application_id: row.application_id,
          execution_id: executionId,
          failure_type: outcome.failureType,
          error_message: outcome.message,
        });
      }
    });
    this.d.log.info(
      { sessionId: s.id, identityId: row.id, executionId, ok: outcome.ok, ...(outcome.ok ? {} : { failureType: outcome.failureType }) },
      outcome.ok ? 'identity signed in' : 'identity sign-in failed',
    );
  }
}

function methodsOf(c: SealedCredentials): store.CredentialMethod[] {
  return (['username_password', 'authenticator', 'custom'] as const).filter((m) => c[m] !== undefined);
}
