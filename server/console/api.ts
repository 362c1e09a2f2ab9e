// The console reads and acts through the service's own API, in process (Hono's
// app.request, no socket): every page shows what the contract answers for the signed-in
// key, with the same validation, project scoping and errors, and no second path to the
// data to keep in step with the first. What the contract has no operation for (API keys,
// a session's events, a delivery's retry, sessions a DELETE removed from the API) the
// console does through the stores of the capabilities that own it (routes.ts).
import type { Hono } from 'hono';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ConsoleApi {
  /** The JSON answer of a 2xx; throws ApiError with the API's message otherwise. */
  get<T>(path: string): Promise<T>;
  send<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T>;
  /** The raw answer (files). */
  raw(path: string): Promise<Response>;
}

export function consoleApi(app: Hono, key: string): ConsoleApi {
  const call = async (method: string, path: string, body?: unknown) =>
    app.request(path, {
      method,
      headers: { 'service-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const json = async <T>(res: Response): Promise<T> => {
    const text = await res.text();
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (!res.ok) {
      const message = (parsed as { error?: { message?: string } } | undefined)?.error?.message ?? `HTTP ${res.status}`;
      throw new ApiError(res.status, message);
    }
    return parsed as T;
  };
  return {
    get: async (path) => json(await call('GET', path)),
    send: async (method, path, body) => json(await call(method, path, body)),
    raw: (path) => call('GET', path),
  };
}
