// The registry: KV bucket hookbus_hooks, key "<stage>.<plugin>", value the
// registration as JSON, written and checked as bus.Registry does, so a loop
// reads exactly what Go's Registry.Put would have written.
import type { NatsConnection } from "@nats-io/nats-core";
import { Kvm, type KV } from "@nats-io/kv";
import { HookbusError } from "./errors.js";
import { formatGoDuration, parseGoDuration } from "./duration.js";
import { checkKinds, checkMatcher } from "./match.js";
import { DEFAULT_PREFIX, MAX_TIMEOUT_MS, checkKeyID, checkPrefix, isInterceptable, namesFor, validateID } from "./protocol.js";
import type { ActionKind, InterceptableStage, Mode, Policy, Registration } from "./schema.js";
import { PRIVILEGED_STAGES, STAGE_DECISIONS, TOOL_MATCHED_STAGES } from "./stages.js";

/** RegistrationInput is a registration to write: the JSON form's fields, timeout in milliseconds or as a Go duration. */
export interface RegistrationInput {
  /** The plugin id: letters, digits, '-', '_', '/' and '=' (a registry key). */
  plugin: string;
  /** The interceptable stage. */
  stage: InterceptableStage;
  /** Lower runs first; equal orders run in the order the entries were last written. */
  order?: number;
  /** Bounds each call: milliseconds, or a Go duration ("2s"); default 5 s, at most 30 s. */
  timeout?: number | string;
  /** What a failure does: ignore (the default: go on as if allowed) or fail (deny). */
  policy?: Policy;
  /** mutate (the default), validate (allow or deny only, in parallel) or shadow (recorded, never applied). */
  mode?: Mode;
  /** Tool names (tool.before, tool.after; the called agent on subagent.before): globs with "|", or "re:" and a regular expression. */
  tools?: string;
  /** Action kinds of the call (tool.before, tool.after), whatever the harness names the tool (docs/ACTIONS.md): a list of kinds (["shell", "file.write"]), or kinds and globs ("file.*") separated by "|". With tools too, a call must match both. */
  kinds?: string | readonly ActionKind[];
  /** Agent ids: globs with "|", or "re:" and a regular expression. */
  agents?: string;
}

/** Options of the registry functions. */
export interface RegistryOptions {
  /** The subject prefix whose buckets are used (default "hookbus"). */
  prefix?: string;
  /** Write the registration as leased ("lease":true): loops call it only while its plugin holds a lease (holdLease; intercept with register does both). */
  lease?: boolean;
}

/**
 * registrationValue checks reg as interceptors.Registration.Validate and
 * bus.Registry.Put do, and returns its KV key and value: the bytes Go's
 * json.Marshal writes for it. It throws a HookbusError of kind "invalid"
 * naming the field.
 */
export function registrationValue(reg: RegistrationInput): { key: string; value: string; registration: Registration } {
  if ((reg as { builtin?: unknown }).builtin) {
    throw new HookbusError("invalid", `plugin ${reg.plugin} on ${reg.stage}: builtin is set by code registering in-process interceptors, never through the registry`);
  }
  validateID("plugin", reg.plugin);
  const bad = (what: string) => new HookbusError("invalid", `invalid registration: plugin ${reg.plugin} on ${reg.stage}: ${what}`);
  if (!isInterceptable(reg.stage)) throw bad(`stage ${JSON.stringify(reg.stage)} is not an interceptable hookbus stage`);
  let timeout: string | undefined;
  if (reg.timeout !== undefined && reg.timeout !== 0 && reg.timeout !== "") {
    const ns = typeof reg.timeout === "number" ? Math.round(reg.timeout * 1e6) : parseGoDuration(reg.timeout);
    if (ns < 0) throw bad(`timeout ${formatGoDuration(ns)} is negative`);
    if (ns > MAX_TIMEOUT_MS * 1e6) throw bad(`timeout ${formatGoDuration(ns)} exceeds the 30s cap`);
    if (ns !== 0) timeout = formatGoDuration(ns);
  }
  if (reg.order !== undefined && !Number.isSafeInteger(reg.order)) throw bad(`order ${reg.order} is not an integer`);
  switch (reg.policy as string | undefined) {
    case "":
    case undefined: case "ignore": case "fail": break;
    default: throw bad(`policy ${JSON.stringify(reg.policy)} (want "ignore" or "fail")`);
  }
  switch (reg.mode as string | undefined) {
    case "":
    case undefined: case "mutate": case "shadow": break;
    case "validate":
      if (!(STAGE_DECISIONS[reg.stage] as readonly string[]).includes("deny")) {
        throw bad(`mode validate needs a stage that accepts deny (${reg.stage} accepts ${STAGE_DECISIONS[reg.stage].join(", ")})`);
      }
      break;
    default: throw bad(`mode ${JSON.stringify(reg.mode)} (want "mutate", "validate" or "shadow")`);
  }
  if (reg.tools && !TOOL_MATCHED_STAGES.includes(reg.stage)) {
    throw bad(`tools matcher ${JSON.stringify(reg.tools)} applies only on ${TOOL_MATCHED_STAGES.join(", ")}`);
  }
  const kinds = typeof reg.kinds === "string" || reg.kinds === undefined ? reg.kinds : reg.kinds.join("|");
  if (kinds && reg.stage !== "tool.before" && reg.stage !== "tool.after") {
    throw bad(`kinds matcher ${JSON.stringify(kinds)} applies only on tool.before and tool.after`);
  }
  try {
    checkMatcher("tools", reg.tools ?? "");
    checkKinds(kinds ?? "");
    checkMatcher("agents", reg.agents ?? "");
  } catch (err) {
    throw bad((err as Error).message);
  }
  checkKeyID(reg.plugin);
  // Go's field order and omitempty: plugin, stage, order, policy, mode, tools, kinds, agents, timeout.
  const r: Registration = { plugin: reg.plugin, stage: reg.stage };
  if (reg.order) r.order = reg.order;
  if (reg.policy) r.policy = reg.policy;
  if (reg.mode) r.mode = reg.mode;
  if (reg.tools) r.tools = reg.tools;
  if (kinds) r.kinds = kinds;
  if (reg.agents) r.agents = reg.agents;
  if (timeout) r.timeout = timeout;
  return { key: `${reg.stage}.${reg.plugin}`, value: goJSON(r), registration: r };
}

/** goJSON is JSON.stringify with Go's escaping of <, >, &, U+2028 and U+2029. */
function goJSON(v: unknown): string {
  return JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/**
 * register adds or replaces the registration of reg.plugin on reg.stage in
 * the registry, as bus.Registry.Put does: checked first (registrationValue),
 * and on a privileged stage only when the plugin has a grant in the trust
 * bucket (HookbusError "privileged" otherwise). Bucket failures are
 * HookbusError "registry".
 */
export async function register(nc: NatsConnection, reg: RegistrationInput, opts: RegistryOptions = {}): Promise<Registration> {
  const { key, value, registration } = registrationValue(reg);
  const names = namesFor(checkPrefix(opts.prefix ?? DEFAULT_PREFIX));
  if (PRIVILEGED_STAGES.includes(reg.stage) && !(await granted(nc, names.trust, reg.plugin))) {
    throw new HookbusError("privileged", `plugin ${reg.plugin} lacks privileged_hooks permission for stage ${reg.stage} (grant it first)`);
  }
  const kv = await bucket(nc, names.hooks);
  try {
    // The lease mark comes first, as Go's Registry.Hold writes it.
    await kv.put(key, opts.lease ? '{"lease":true,' + value.slice(1) : value);
  } catch (err) {
    throw new HookbusError("registry", `put ${key} in key-value bucket ${names.hooks}: ${(err as Error).message}`, { cause: err });
  }
  return registration;
}

/**
 * unregister removes the registration of plugin on stage, as
 * bus.Registry.Delete does (only the revision read: a concurrent put is not
 * deleted unseen). HookbusError "not_found" when there is none.
 */
export async function unregister(nc: NatsConnection, stage: InterceptableStage, plugin: string, opts: RegistryOptions = {}): Promise<void> {
  validateID("plugin", plugin);
  checkKeyID(plugin);
  if (!isInterceptable(stage)) throw new HookbusError("invalid", `invalid registration: plugin ${plugin}: stage ${JSON.stringify(stage)} is not an interceptable hookbus stage`);
  const names = namesFor(checkPrefix(opts.prefix ?? DEFAULT_PREFIX));
  const kv = await bucket(nc, names.hooks);
  const key = `${stage}.${plugin}`;
  let e;
  try {
    e = await kv.get(key);
  } catch (err) {
    throw new HookbusError("registry", `get ${key} from key-value bucket ${names.hooks}: ${(err as Error).message}`, { cause: err });
  }
  if (!e || e.operation !== "PUT") throw new HookbusError("not_found", `no registration of plugin ${plugin} on ${stage}`);
  try {
    await kv.delete(key, { previousSeq: e.revision });
  } catch (err) {
    throw new HookbusError("registry", `delete ${key} from key-value bucket ${names.hooks}: ${(err as Error).message}`, { cause: err });
  }
}

/** granted reports whether plugin holds privileged_hooks in the trust bucket. */
async function granted(nc: NatsConnection, trust: string, plugin: string): Promise<boolean> {
  const kv = await bucket(nc, trust);
  try {
    const e = await kv.get(plugin);
    if (!e || e.operation !== "PUT") return false;
    return (e.json() as { privileged_hooks?: unknown }).privileged_hooks === true;
  } catch (err) {
    if (err instanceof SyntaxError) return false;
    throw new HookbusError("registry", `get ${plugin} from key-value bucket ${trust}: ${(err as Error).message}`, { cause: err });
  }
}

export async function bucket(nc: NatsConnection, name: string): Promise<KV> {
  try {
    return await new Kvm(nc).open(name);
  } catch (err) {
    const msg = (err as Error).message;
    if (/not found/i.test(msg)) throw new HookbusError("registry", `key-value bucket ${name} does not exist (provision the bus first)`, { cause: err });
    throw new HookbusError("registry", `open key-value bucket ${name}: ${msg}`, { cause: err });
  }
}
