/** The kinds of HookbusError, as bus' sentinels name them. */
export type ErrorKind =
  /** A bad option or registration field; the message names it. */
  | "invalid"
  /** A plugin without privileged_hooks on a privileged stage, or a subscription the server refused. */
  | "privileged"
  /** No such registration. */
  | "not_found"
  /** The registry or trust bucket could not be read or written. */
  | "registry"
  /** No NATS server answered at the address intercept connects to. */
  | "connection";

/** HookbusError is every error the SDK itself raises; kind says which. */
export class HookbusError extends Error {
  readonly kind: ErrorKind;
  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HookbusError";
    this.kind = kind;
  }
}

/** isHookbusError reports whether err is a HookbusError, of kind when given. */
export function isHookbusError(err: unknown, kind?: ErrorKind): err is HookbusError {
  return err instanceof HookbusError && (kind === undefined || err.kind === kind);
}
