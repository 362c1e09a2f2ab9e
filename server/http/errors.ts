// The three documented error bodies, and the one place that builds them.
import type { ErrorShape } from '../../generated/routes.js';

export interface GeneralError<S extends number = number> {
  error: { code: S; message: string };
}

/** The general error answer, typed so it fits only operations documenting that status. */
export function fail<S extends number>(status: S, message: string): { status: S; body: GeneralError<S> } {
  return { status, body: { error: { code: status, message } } };
}

/** The fetch tool's `{error: string}` answer. */
export function failText<S extends number>(status: S, message: string): { status: S; body: { error: string } } {
  return { status, body: { error: message } };
}

export const agentAccessNext = {
  path: '/v1/agent-access',
  description: 'Read the onboarding guide, then request a challenge.',
};

/** Renders an error in the shape the operation documents for that status. */
export function errorBody(shape: ErrorShape | undefined, status: number, message: string, docsUrl: string): unknown {
  switch (shape) {
    case 'fetch':
      return { error: message };
    case 'agentAccess':
      return { error: message, next: agentAccessNext, docs: docsUrl };
    default:
      return { error: { code: status, message } };
  }
}
