// A tool's page once navigated: ready (readiness.ts) → challenges passed (challenges.ts) →
// consent dismissed (consent.ts) → for the web fetch, the rendered DOM; for screenshot and
// page PDF, the page as it is then, to be captured.
import type { BrowserContext, Page } from 'playwright-core';
import type { Logger } from 'pino';
import type { CaptchaSolver } from '../page/captcha-adapter.js';
import { challengeProbe, passChallenges, playwrightPage, type DetectedChallenge } from '../page/challenges.js';
import { CONSENT_SIGNS_PROBE, type ConsentTracker } from '../page/consent.js';
import { inPageAll } from '../page/in-page.js';
import { readyThenProbe, waitForAnimations, waitForReady, type NetworkTracker } from '../page/readiness.js';
import type { FileResult } from './files.js';
import type { MainDocument, Spotted } from './main-document.js';
import { foundFile, navigate, type NavigateConfig, type WaitUntil } from './navigate.js';
import { ToolError } from './tool-error.js';
import { upstreamFailure } from './upstream-failure.js';

export interface PageResult {
  kind: 'html';
  html: string;
  status: number;
  /** The page's address after redirects. */
  url: string;
  /** Challenges passed and consent dialogs dismissed, for the log. */
  challenges: string[];
  consent: string[];
}

export type FetchResult = FileResult | PageResult;

/**
 * One tool request's visit: its context and page, what watches the page (the main
 * document, consent dialogs, network quiet), the request's deadline and log, and the
 * service's pipeline settings.
 */
export interface Visit {
  context: BrowserContext;
  page: Page;
  main: MainDocument;
  consent: ConsentTracker;
  tracker: NetworkTracker;
  deadline: number;
  log: Logger;
  pipeline: Pipeline;
}

/** What the pipeline reads of the service: the configuration (when it needs it) and the captcha solver. */
export interface Pipeline {
  config: NavigateConfig;
  solver?: CaptchaSolver;
}

/**
 * A page after navigation: ready, challenges passed, consent dismissed, then its DOM
 * (`waitMs` later, for a caller that knows its page fills in late).
 */
export async function renderPage(v: Visit, waitMs = 0): Promise<FetchResult | Spotted> {
  const { page, main, consent, tracker, deadline, log, pipeline } = v;
  // The first looks for a challenge and for consent signs ride on the last readiness check:
  // every round trip while the page is open costs it browser time, most of all under load.
  const status = () => main.last?.status ?? 200;
  const hint = status();
  const look = await readyThenProbe<{ challenge: DetectedChallenge | null; consent: boolean }>(
    page,
    tracker,
    { deadline },
    inPageAll({ challenge: challengeProbe(hint), consent: CONSENT_SIGNS_PROBE }),
  );
  const challenges = await passChallenges(playwrightPage(page), {
    deadline,
    timeoutSeconds: pipeline.config.fetchTimeoutSeconds,
    status,
    solver: pipeline.solver,
    log,
    // Detection weighs the document's status: a script that navigated to a document of
    // another status meanwhile makes the probe's answer stale.
    first: status() === hint ? look?.challenge : undefined,
  });
  await main.settled();
  let found = main.found();
  if (found) return foundFile(found, main);
  if (challenges.length) await waitForReady(page, tracker, { deadline });
  // After a challenge the page is another one: its consent signs are looked at anew.
  const dismissed = (await consent.settle(page, deadline, undefined, challenges.length ? undefined : look?.consent)).dismissed;
  if (dismissed.length) {
    await waitForAnimations(page, Math.min(3000, deadline - Date.now()));
    await waitForReady(page, tracker, { deadline, maxSettleMs: 3000 });
  }
  await main.settled();
  found = main.found();
  if (found) return foundFile(found, main);
  const last = main.last;
  if (main.refusedPrivate) throw new ToolError(403, `Refused to fetch a private, loopback or link-local address: ${last ? new URL(last.url).host : ''}`);
  const failure = upstreamFailure(last);
  if (failure) throw failure;
  if (waitMs > 0) await page.waitForTimeout(Math.min(waitMs, Math.max(0, deadline - Date.now())));
  let html: string;
  try {
    html = await page.content();
  } catch {
    await page.waitForLoadState('load', { timeout: Math.max(1, Math.min(10_000, deadline - Date.now())) }).catch(() => {});
    html = await page.content();
  }
  if (challenges.length || dismissed.length) log.info({ challenges, consent: dismissed }, 'fetch passed challenges and consent dialogs');
  return { kind: 'html', html, status: last?.status ?? 200, url: last?.url ?? page.url(), challenges, consent: dismissed };
}

/** Screenshot and PDF: load as asked, pass challenges, dismiss consent. */
export async function prepare(v: Visit, url: URL, waitUntil: WaitUntil): Promise<void> {
  const { page, main, consent, tracker, deadline, log, pipeline } = v;
  try {
    await navigate(page, main, url, deadline, waitUntil, pipeline.config);
  } catch (err) {
    if (err instanceof ToolError && err.status === 502 && /Download is starting/.test(err.message)) {
      throw new ToolError(400, 'The URL answers a file download, which has no page to capture');
    }
    throw err;
  }
  const challenges = await passChallenges(playwrightPage(page), {
    deadline,
    timeoutSeconds: pipeline.config.fetchTimeoutSeconds,
    status: () => main.last?.status ?? 200,
    solver: pipeline.solver,
    log,
  });
  if (challenges.length)
    await page.waitForLoadState(waitUntil === 'networkidle' ? 'load' : waitUntil, { timeout: Math.max(1, deadline - Date.now()) }).catch(() => {});
  if (waitUntil === 'networkidle' || challenges.length) await waitForReady(page, tracker, { deadline });
  const dismissed = (await consent.settle(page, deadline, waitUntil === 'networkidle' ? 8000 : 2000)).dismissed;
  if (dismissed.length) {
    await waitForAnimations(page, Math.min(3000, deadline - Date.now()));
    await waitForReady(page, tracker, { deadline, maxSettleMs: 2000 });
  }
  const last = main.last;
  if (main.refusedPrivate) throw new ToolError(403, 'Refused to load a private, loopback or link-local address');
  const failure = upstreamFailure(last);
  if (failure) throw failure;
}
