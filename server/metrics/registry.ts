// The process's Prometheus metrics (prom-client), in one registry every series of which
// carries the node's name. What the code reports as it happens (HTTP requests, sessions
// started and ended) is counted here through a few methods; what is state (browsers
// running, backlogs) is read when /metrics is scraped (collectors.ts), so capabilities keep
// no instrumentation of their own.
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

export const PREFIX = 'cloud_browser_';

/** One HTTP request as the app saw it: the contract's operation, or none for other routes. */
export interface RequestSample {
  operationId: string | undefined;
  status: number;
  seconds: number;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'operation' | 'status'>;
  private readonly requestSeconds: Histogram<'operation'>;
  private readonly sessionsCreated: Counter;
  private readonly sessionsEnded: Counter<'status' | 'reason'>;
  private readonly createSeconds: Histogram;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
    const registers = [this.registry];
    this.requests = new Counter({
      name: `${PREFIX}http_requests_total`,
      help: 'HTTP requests answered, by contract operation (operationId; "other" for routes outside the contract) and status.',
      labelNames: ['operation', 'status'],
      registers,
    });
    this.requestSeconds = new Histogram({
      name: `${PREFIX}http_request_duration_seconds`,
      help: 'Time to answer an HTTP request (until the response starts), by contract operation.',
      labelNames: ['operation'],
      // Up to the web fetch tool's 120 s challenges.
      buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
    this.sessionsCreated = new Counter({
      name: `${PREFIX}sessions_created_total`,
      help: 'Sessions this node started (their browser up and initial_url loaded).',
      registers,
    });
    this.sessionsEnded = new Counter({
      name: `${PREFIX}sessions_ended_total`,
      help: 'Sessions of this node that ended, by status (completed, failed) and reason (api, idle_timeout, max_duration, browser_closed, browser_unreachable, server_shutdown, ...).',
      labelNames: ['status', 'reason'],
      registers,
    });
    this.createSeconds = new Histogram({
      name: `${PREFIX}session_create_duration_seconds`,
      help: 'From a session creation request to its browser running (warm pool or cold launch, initial_url included).',
      buckets: [0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60],
      registers,
    });
  }

  /** Names the node in every series (known once the sessions capability has made its id). */
  setNode(node: string): void {
    this.registry.setDefaultLabels({ node });
  }

  readonly observeRequest = (s: RequestSample): void => {
    const operation = s.operationId ?? 'other';
    this.requests.inc({ operation, status: String(s.status) });
    this.requestSeconds.observe({ operation }, s.seconds);
  };

  sessionStarted(createSeconds: number): void {
    this.sessionsCreated.inc();
    this.createSeconds.observe(createSeconds);
  }

  sessionEnded(status: string, reason: string): void {
    this.sessionsEnded.inc({ status, reason });
  }
}
