// The server's trace spans, made through @opentelemetry/api alone: a no-op until
// metrics/tracing.ts registers a provider (OTEL_EXPORTER_OTLP_ENDPOINT). One place for the
// tracer's name and for how a span ends, so an HTTP request, a query and a session's start
// read alike in a trace.
import { SpanStatusCode, trace, type Span, type SpanOptions, type Tracer } from '@opentelemetry/api';

/**
 * Asked for at each use: a server started again in this process (tests) registers a new
 * provider, which tracers obtained earlier would not see.
 */
export const tracer = (): Tracer => trace.getTracer('cloud-browser');

/** Runs `fn` as a child span of the current one; a failure marks the span, and it ends either way. */
export function spanned<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, options, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}
