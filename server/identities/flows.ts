// What a login is: an authentication flow's `login` checked when it is written, and turned
// into the ordered steps the runner (login.ts) performs. The ready-made kinds are step lists
// too, so one runner serves them all.
import type { components } from '../../generated/types.js';
import type { ApplicationRow, AuthFlowLogin, AuthFlowRow, CredentialMethod } from './store.js';

export type Step = components['schemas']['AuthFlowStep'];
export type Condition = components['schemas']['AuthFlowCondition'];

/** The usual fields, when a flow's selectors leave them out. */
export const DEFAULT_SELECTORS = {
  username:
    'input[autocomplete="username"], input[type="email"], input[name*="user" i], input[name*="email" i], input[name*="login" i], input[id*="user" i], input[id*="email" i]',
  password: 'input[type="password"]',
  submit: 'button[type="submit"], input[type="submit"], form button:not([type])',
  totp: 'input[autocomplete="one-time-code"], input[name*="otp" i], input[name*="totp" i], input[name*="code" i], input[id*="otp" i], input[id*="code" i]',
} as const;

export const DEFAULT_TIMEOUT_SECONDS = 30;

/** A login ready to run. */
export interface LoginPlan {
  /** `auto` reads each page (auto-login.ts) and has no steps; the others run `steps`. */
  auto: boolean;
  loginUrl: string;
  steps: Step[];
  /** undefined: the default (left the login URL, no password or code field shown). */
  success: Condition | undefined;
  /** undefined: the default text of a refused password. */
  failure: Condition | undefined;
  timeoutMs: number;
  /** Hosts on which credentials may be typed. */
  allowedHosts: Set<string>;
}

/** The login of a flow with every default filled in (answered by reads, stored by writes). */
export function completeLogin(login: AuthFlowLogin | undefined): AuthFlowLogin {
  return {
    kind: login?.kind ?? 'auto',
    login_url: login?.login_url ?? null,
    ...(login?.selectors ? { selectors: login.selectors } : {}),
    ...(login?.steps ? { steps: login.steps } : {}),
    ...(login?.success ? { success: login.success } : {}),
    ...(login?.failure ? { failure: login.failure } : {}),
    timeout_seconds: login?.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS,
  };
}

const REQUIRED: Record<Step['action'], (keyof Step)[]> = {
  goto: ['url'],
  fill: ['selector', 'value'],
  click: ['selector'],
  wait_for_url: ['url_contains'],
  wait_for_selector: ['selector'],
  totp: ['selector'],
  choose_account: [],
};

export function allowedHosts(app: Pick<ApplicationRow, 'url' | 'allowed_domains'>): Set<string> {
  return new Set([new URL(app.url).hostname.toLowerCase(), ...app.allowed_domains.map((d) => d.toLowerCase())]);
}

/** Why a flow's login cannot run for this application (the 400's message), or undefined. */
export function loginRefusal(login: AuthFlowLogin, methods: CredentialMethod[], app: Pick<ApplicationRow, 'url' | 'allowed_domains'>): string | undefined {
  const hosts = allowedHosts(app);
  if (login.login_url && !hosts.has(new URL(login.login_url).hostname.toLowerCase())) {
    return `login.login_url: ${new URL(login.login_url).hostname} is neither the application's host nor in its allowed_domains`;
  }
  if (login.kind === 'custom') {
    if (!login.steps?.length) return 'login.steps: a custom login needs at least one step';
    if (login.selectors) return 'login.selectors: only the ready-made kinds (one_page, two_pages) use selectors; a custom login names them in its steps';
    for (const [i, step] of login.steps.entries()) {
      const missing = REQUIRED[step.action].find((k) => step[k] === undefined);
      if (missing) return `login.steps[${i}]: ${step.action} needs ${missing}`;
      if (step.action === 'totp' && !methods.includes('authenticator')) return `login.steps[${i}]: a totp step needs the authenticator method in methods`;
    }
    return undefined;
  }
  if (login.steps) return `login.steps: only a custom login has steps (kind is ${login.kind})`;
  if (login.kind === 'auto' && login.selectors) return 'login.selectors: an auto login finds the fields itself; name them with kind one_page or two_pages';
  if (!methods.includes('username_password')) return `login.kind ${login.kind} signs in with a user name and password: methods must include username_password`;
  return undefined;
}

/** The steps of a flow (or of the default flow when the application has none), for this application. */
export function planLogin(app: ApplicationRow, flow: Pick<AuthFlowRow, 'login' | 'methods'> | undefined, identityMethods: CredentialMethod[]): LoginPlan {
  const login = completeLogin(flow?.login);
  // Without a flow, the identity's own credentials say what the login asks for.
  const methods = flow?.methods ?? identityMethods;
  const loginUrl = login.login_url ?? app.url;
  return {
    auto: login.kind === 'auto',
    loginUrl,
    steps:
      login.kind === 'auto'
        ? []
        : login.kind === 'custom'
          ? [{ action: 'goto', url: loginUrl }, ...(login.steps ?? [])]
          : readyMade(login, loginUrl, methods.includes('authenticator')),
    success: login.success,
    failure: login.failure,
    timeoutMs: (login.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
    allowedHosts: allowedHosts(app),
  };
}

function readyMade(login: AuthFlowLogin, loginUrl: string, withTotp: boolean): Step[] {
  const sel = login.selectors ?? {};
  const username = sel.username ?? DEFAULT_SELECTORS.username;
  const password = sel.password ?? DEFAULT_SELECTORS.password;
  const submit = sel.submit ?? DEFAULT_SELECTORS.submit;
  const steps: Step[] = [
    { action: 'goto', url: loginUrl },
    { action: 'fill', selector: username, value: '{{username}}' },
  ];
  if (login.kind === 'two_pages') steps.push({ action: 'click', selector: sel.next ?? DEFAULT_SELECTORS.submit });
  steps.push({ action: 'fill', selector: password, value: '{{password}}' }, { action: 'click', selector: submit });
  if (withTotp) {
    const totp = sel.totp ?? DEFAULT_SELECTORS.totp;
    steps.push({ action: 'totp', selector: totp }, { action: 'click', selector: sel.totp_submit ?? DEFAULT_SELECTORS.submit });
  }
  return steps;
}
