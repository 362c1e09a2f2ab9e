// The one error the tools throw: the status and message the handlers answer (and, for a full
// queue, the headers).
export type ToolErrorStatus = 400 | 403 | 429 | 500 | 502 | 504;

export class ToolError extends Error {
  constructor(
    readonly status: ToolErrorStatus,
    message: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}
