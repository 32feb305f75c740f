// Names of hookbus' wire protocol (docs/PROTOCOL.md): subjects, headers,
// asset names, and the checks of ids that every subject token passes.
import { HookbusError } from "./errors.js";
import type { InterceptableStage, Stage } from "./schema.js";
import { INTERCEPTABLE_STAGES, STAGES } from "./stages.js";

/** The subject prefix when none is configured. */
export const DEFAULT_PREFIX = "hookbus";
/** When the loop stops waiting for the reply (RFC 3339, UTC): informational when Hookbus-Timeout-Ms is present. */
export const HEADER_DEADLINE = "Hookbus-Deadline";
/** The budget left when the request was sent, in milliseconds: the deadline, measured from the request's arrival. */
export const HEADER_TIMEOUT_MS = "Hookbus-Timeout-Ms";
/** The W3C trace context of the interceptor call. */
export const HEADER_TRACEPARENT = "traceparent";
/** The budget of a request that carries no deadline (interceptors.DefaultTimeout). */
export const DEFAULT_TIMEOUT_MS = 5_000;
/** The longest timeout a registration may ask for (interceptors.MaxTimeout). */
export const MAX_TIMEOUT_MS = 30_000;
/** The longest id, in bytes (events.MaxIDLen). */
export const MAX_ID_LEN = 128;
/** The wire protocol's version, announced in a service's metadata. */
export const PROTOCOL_VERSION = "1";

const encoder = new TextEncoder();

/**
 * validateID checks that id can stand as one NATS subject token, as
 * events.ValidateID does: not empty, at most 128 bytes, valid UTF-8 text
 * without '.', '*', '>', whitespace, control or format characters.
 */
export function validateID(kind: string, id: string): void {
  if (id === "") throw new HookbusError("invalid", `${kind} id is empty`);
  const n = encoder.encode(id).length;
  if (n > MAX_ID_LEN) throw new HookbusError("invalid", `${kind} id ${JSON.stringify(id.slice(0, 32))}... is ${n} bytes (max ${MAX_ID_LEN})`);
  if (!id.isWellFormed()) throw new HookbusError("invalid", `${kind} id ${JSON.stringify(id)} is not valid UTF-8`);
  for (const ch of id) {
    if (ch === "." || ch === "*" || ch === ">") {
      throw new HookbusError("invalid", `${kind} id ${JSON.stringify(id)} contains ${JSON.stringify(ch)} (not allowed in a subject token)`);
    }
    if (/[\s\p{Cc}\uFFFD]/u.test(ch)) {
      throw new HookbusError("invalid", `${kind} id ${JSON.stringify(id)} contains whitespace or a control character`);
    }
    if (/[\p{Cf}\p{Cn}\p{Co}\p{Cs}]/u.test(ch)) {
      throw new HookbusError("invalid", `${kind} id ${JSON.stringify(id)} contains an invisible or unprintable character`);
    }
  }
}

/** checkPrefix checks a subject prefix: one or more tokens, each a valid id. */
export function checkPrefix(prefix: string): string {
  if (prefix === "") return DEFAULT_PREFIX;
  for (const tok of prefix.split(".")) {
    try {
      validateID("prefix", tok);
    } catch (err) {
      throw new HookbusError("invalid", `subject prefix ${JSON.stringify(prefix)}: ${(err as Error).message}`);
    }
  }
  return prefix;
}

/** isStage reports whether s is a hookbus stage. */
export function isStage(s: string): s is Stage {
  return (STAGES as readonly string[]).includes(s);
}

/** isInterceptable reports whether intercepting hooks may be registered on s. */
export function isInterceptable(s: string): s is InterceptableStage {
  return (INTERCEPTABLE_STAGES as readonly string[]).includes(s);
}

/** hookSubject is the interception subject of a plugin on a stage: <prefix>.hook.<stage>.<plugin>. */
export function hookSubject(prefix: string, stage: Stage, plugin: string): string {
  return `${prefix}.hook.${stage}.${plugin}`;
}

/** endpointName is the micro endpoint name of a stage: "tool.before" gives "tool_before". */
export function endpointName(stage: Stage): string {
  return stage.replaceAll(".", "_");
}

/** The JetStream assets of a prefix, as bus.NamesFor derives them. */
export interface Names {
  /** The interceptor registry (KV). */
  hooks: string;
  /** The trust grants (KV). */
  trust: string;
  /** The claim-checked payloads (object store). */
  payloads: string;
  /** The leases of live plugins (KV): a leased registration is called while its plugin renews one. */
  leases: string;
}

/** namesFor returns the asset names of a prefix: "acme.hookbus" gives acme_hookbus_hooks. */
export function namesFor(prefix: string): Names {
  const low = (prefix || DEFAULT_PREFIX).replaceAll(".", "_").toLowerCase();
  return { hooks: `${low}_hooks`, trust: `${low}_trust`, payloads: `${low}_payloads`, leases: `${low}_leases` };
}

/** validServiceName reports whether s can be a micro service name: letters, digits, '-' and '_'. */
export function validServiceName(s: string): boolean {
  return /^[A-Za-z0-9_-]+$/.test(s);
}

/** checkKeyID checks that a plugin id can be a registry key: letters, digits, '-', '_', '/' and '='. */
export function checkKeyID(plugin: string): void {
  if (!/^[A-Za-z0-9_/=-]*$/.test(plugin)) {
    throw new HookbusError("invalid", `plugin id ${JSON.stringify(plugin)} cannot be a registry key (letters, digits, '-', '_', '/' and '=' only)`);
  }
}
