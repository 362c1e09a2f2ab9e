// Adapter to a captcha-solving service speaking the createTask/getTaskResult protocol shared
// by the common vendors (Anti-Captcha, CapMonster, CapSolver, 2Captcha's v2 API):
//
//   POST {base}/createTask    {clientKey, task: {type, websiteURL, websiteKey, ...}}
//                             → {errorId: 0, taskId} | {errorId: N, errorCode, errorDescription}
//   POST {base}/getTaskResult {clientKey, taskId}
//                             → {errorId: 0, status: "processing"}
//                             | {errorId: 0, status: "ready", solution: {gRecaptchaResponse | token, ...}}
//
// Used only when CAPTCHA_SERVICE_URL is configured. The client key is sent in the body and
// never logged or put in an error message.
import { setTimeout as sleep } from 'node:timers/promises';

export type CaptchaKind = 'recaptcha_v2' | 'recaptcha_v3' | 'hcaptcha' | 'turnstile';

export interface CaptchaTask {
  kind: CaptchaKind;
  websiteURL: string;
  websiteKey: string;
  /** reCAPTCHA v3 and Turnstile action. */
  action?: string;
  /** Turnstile cData. */
  data?: string;
  /** reCAPTCHA v2 invisible. */
  invisible?: boolean;
}

export interface CaptchaSolver {
  solve(task: CaptchaTask, options: { deadline: number; signal?: AbortSignal }): Promise<string>;
}

export class CaptchaServiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaptchaServiceError';
  }
}

export interface CaptchaServiceOptions {
  /** Base URL, e.g. https://api.anti-captcha.com */
  url: string;
  clientKey: string;
  /** Between getTaskResult polls (default 3000 ms; vendors ask for 2 to 5 s). */
  pollIntervalMs?: number;
  /** Before the first poll (default: pollIntervalMs). */
  firstPollDelayMs?: number;
}

/** The protocol's task type names. */
export function taskType(kind: CaptchaKind): string {
  switch (kind) {
    case 'recaptcha_v2':
      return 'RecaptchaV2TaskProxyless';
    case 'recaptcha_v3':
      return 'RecaptchaV3TaskProxyless';
    case 'hcaptcha':
      return 'HCaptchaTaskProxyless';
    case 'turnstile':
      return 'TurnstileTaskProxyless';
  }
}

export class CaptchaServiceClient implements CaptchaSolver {
  private readonly base: string;
  constructor(private readonly options: CaptchaServiceOptions) {
    this.base = options.url.replace(/\/+$/, '');
  }

  private async call(method: 'createTask' | 'getTaskResult', body: object, deadline: number, signal?: AbortSignal): Promise<Record<string, any>> {
    const timeout = AbortSignal.timeout(Math.max(1, Math.min(30_000, deadline - Date.now())));
    let res: Response;
    try {
      res = await fetch(`${this.base}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ clientKey: this.options.clientKey, ...body }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new CaptchaServiceError(`captcha service ${method} failed: ${(err as Error).name === 'TimeoutError' ? 'timed out' : (err as Error).message}`);
    }
    const text = await res.text();
    if (!res.ok) throw new CaptchaServiceError(`captcha service ${method} answered HTTP ${res.status}`);
    let json: Record<string, any>;
    try {
      json = JSON.parse(text);
    } catch {
      throw new CaptchaServiceError(`captcha service ${method} answered something other than JSON`);
    }
    if (json.errorId && json.errorId !== 0) {
      throw new CaptchaServiceError(
        `captcha service ${method} error ${json.errorCode ?? json.errorId}${json.errorDescription ? `: ${json.errorDescription}` : ''}`,
      );
    }
    return json;
  }

  async solve(task: CaptchaTask, options: { deadline: number; signal?: AbortSignal }): Promise<string> {
    const { deadline, signal } = options;
    const payload: Record<string, unknown> = { type: taskType(task.kind), websiteURL: task.websiteURL, websiteKey: task.websiteKey };
    if (task.kind === 'recaptcha_v3') {
      payload.pageAction = task.action ?? 'verify';
      payload.minScore = 0.7;
    }
    if (task.kind === 'recaptcha_v2' && task.invisible) payload.isInvisible = true;
    if (task.kind === 'turnstile') {
      if (task.action) payload.action = task.action;
      if (task.data) payload.data = task.data;
    }
    const created = await this.call('createTask', { task: payload }, deadline, signal);
    const taskId = created.taskId;
    if (taskId === undefined || taskId === null) throw new CaptchaServiceError('captcha service createTask answered no taskId');
    const interval = this.options.pollIntervalMs ?? 3000;
    let wait = this.options.firstPollDelayMs ?? interval;
    for (;;) {
      if (Date.now() + wait >= deadline) throw new CaptchaServiceError('captcha service did not solve the task in time');
      await sleep(wait, undefined, { signal });
      wait = interval;
      const result = await this.call('getTaskResult', { taskId }, deadline, signal);
      if (result.status === 'ready') {
        const s = result.solution ?? {};
        const token = s.gRecaptchaResponse ?? s.token ?? s.text;
        if (typeof token !== 'string' || token === '') throw new CaptchaServiceError('captcha service answered a solution without a token');
        return token;
      }
      if (result.status !== 'processing' && result.status !== 'idle') {
        throw new CaptchaServiceError(`captcha service answered an unknown status ${JSON.stringify(result.status)}`);
      }
    }
  }
}

/** The captcha-solving service the operator configured (CAPTCHA_SERVICE_URL and _KEY), or none. */
export function configuredCaptchaService(config: { captchaServiceUrl: string | undefined; captchaServiceKey: string | undefined }): CaptchaSolver | undefined {
  return config.captchaServiceUrl && config.captchaServiceKey
    ? new CaptchaServiceClient({ url: config.captchaServiceUrl, clientKey: config.captchaServiceKey })
    : undefined;
}
