// OpenTelemetry traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set: the server's code makes its
// spans through @opentelemetry/api alone (HTTP requests in http/app.ts, queries in
// store/db.ts, session creation and browser launches in sessions/), which costs nothing while
// no provider is registered; this registers one that sends them over OTLP/HTTP (JSON) to
// `${endpoint}/v1/traces`, in batches. An incoming W3C `traceparent` header continues the
// caller's trace.
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

export interface Tracing {
  /** Sends what is buffered, then unregisters (a later start in this process may register again). */
  close(): Promise<void>;
}

export function startTracing(options: { endpoint: string | undefined; node: string }): Tracing {
  if (!options.endpoint) return { close: async () => {} };
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'cloud-browser', 'service.instance.id': options.node }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: `${options.endpoint}/v1/traces` }), scheduledDelayMillis: 1000 })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    async close() {
      await provider.shutdown().catch(() => {});
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
