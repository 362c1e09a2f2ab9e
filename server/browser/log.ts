// The logger this folder needs: the pino call shape (object first, message second), so a
// pino Logger or a child of one fits without an adapter, and tests can pass a silent one.
export interface Log {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLog: Log = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
