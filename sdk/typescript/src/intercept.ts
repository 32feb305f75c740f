// Serving an interceptor: a NATS micro service, as bus.Serve makes one.
import { connect, type ConnectionOptions } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { Svcm, type Service, type ServiceMsg, type ServiceStats } from "@nats-io/services";
import { HookbusError } from "./errors.js";
import { bareAllow, type Answer } from "./decision.js";
import { Gone, Payloads, aborted } from "./payloads.js";
import {
  DEFAULT_PREFIX,
  HEADER_TIMEOUT_MS,
  PROTOCOL_VERSION,
  checkPrefix,
  endpointName,
  hookSubject,
  isInterceptable,
  namesFor,
  validServiceName,
  validateID,
} from "./protocol.js";
import { register, type RegistrationInput } from "./registry.js";
import { holdLease, type Lease } from "./lease.js";
import { decodeEvent, requestDeadline, traceparentOf, type InterceptRequest } from "./request.js";
import type { InterceptableStage } from "./schema.js";

/** Handler decides on one request; it may be async. Returning nothing allows. */
export type Handler<S extends InterceptableStage> = (req: InterceptRequest<S>) => Answer<S> | Promise<Answer<S>>;

/** InterceptOptions say what intercept serves, and how. */
export interface InterceptOptions<S extends InterceptableStage> extends Omit<RegistrationInput, "plugin" | "stage"> {
  /** The plugin id: the service's name, the subjects' last token, the queue group. Letters, digits, '-' and '_'. */
  plugin: string;
  /** The stage or stages served, each an interceptable stage: one endpoint each. */
  stage: S | readonly S[];
  /** Decides on each request. */
  handler: Handler<S>;
  /** The connection to serve on. Without one, intercept connects (connect options, else NATS_URL, else nats://127.0.0.1:4222) and closes it on stop. */
  nc?: NatsConnection;
  /** How to connect when no nc is given. */
  connect?: ConnectionOptions;
  /** The subject prefix (default "hookbus"). */
  prefix?: string;
  /** Also write the registration of each stage into the registry (register), once the service is up, so that loops call the plugin; tools, kinds, agents, order, timeout, policy and mode are its fields. The registrations are held with a lease, renewed while the plugin serves (holdLease): stop removes them (unless another instance still serves the plugin), and if the process dies loops stop calling it within seconds (observer hooks prune removes what is left). */
  register?: boolean;
  /** The service's SemVer version (default "0.0.0"). */
  version?: string;
  /** Describes the service in $SRV.INFO. */
  description?: string;
  /** Annotates the service in $SRV.INFO; hookbus.protocol and hookbus.prefix are added. */
  metadata?: Record<string, string>;
  /** Told of handler failures and replies that could not be sent, and (info) of the service starting and of the connection lost and regained; default: those lines on stderr, handler failures not at all. */
  logger?: { warn(msg: string, ...args: unknown[]): void; info?(msg: string): void };
}

/** Interceptor is a served plugin. Stop it when done. */
export interface Interceptor {
  /** The connection it serves on. */
  readonly nc: NatsConnection;
  /** The micro service: info() and stats(). */
  readonly service: Service;
  /** Resolves when the service stops (with the error that stopped it, or null). */
  readonly stopped: Promise<null | Error>;
  /** stop drains the service (requests under way are answered) and closes the connection intercept opened. */
  stop(): Promise<void>;
  stats(): Promise<ServiceStats>;
}

/** The longest error description sent (bus.Serve's maxErrorText). */
const MAX_ERROR_TEXT = 1024;

/**
 * intercept serves handler on each stage as plugin, exactly as Go's
 * bus.Serve does (docs/PROTOCOL.md, "Interception"): a micro service named
 * after the plugin, one endpoint per stage on <prefix>.hook.<stage>.<plugin>
 * in queue group <plugin>, so instances share the requests and
 * `nats micro ls` finds them. Each request's event is decoded (claim-checked
 * data fetched from the object store), handler is called with the stage's
 * typed payload and a deadline (Hookbus-Timeout-Ms from the request's
 * arrival), and its decision is the reply. A request it cannot read gets
 * error 400; a handler that throws, 500 with the error's message; a deadline
 * that passes first, 504.
 *
 * It throws a HookbusError of kind "invalid" for a bad option, and of kind
 * "privileged" when the server refuses a subscription (a privileged stage
 * needs a privileged user).
 */
export async function intercept<S extends InterceptableStage>(opts: InterceptOptions<S>): Promise<Interceptor> {
  const stages = (Array.isArray(opts.stage) ? [...opts.stage] : [opts.stage]) as S[];
  const prefix = checkPrefix(opts.prefix ?? DEFAULT_PREFIX);
  check(opts.plugin, stages, opts.handler);
  const own = !opts.nc;
  const info = (msg: string) => (opts.logger ? opts.logger.info?.(msg) : console.error(msg));
  const servers = opts.connect?.servers ?? process.env.NATS_URL ?? "nats://127.0.0.1:4222";
  let nc: NatsConnection;
  if (opts.nc) {
    nc = opts.nc;
  } else {
    try {
      nc = await connect({ ...opts.connect, servers });
    } catch (err) {
      throw new HookbusError("connection", `plugin ${opts.plugin}: no NATS server at ${String(servers)} (${(err as Error).message}): start one (loop server, or make run), or point NATS_URL at yours`, { cause: err });
    }
  }
  let service: Service | undefined;
  let lease: Lease | undefined;
  try {
    service = await serve(nc, prefix, stages, opts);
    // Registered once served: a loop never calls a plugin nobody serves yet.
    // The lease first: a loop never sees the registrations without it.
    if (opts.register) {
      lease = await holdLease(nc, opts.plugin, { prefix, onError: (err) => opts.logger?.warn(`hookbus: plugin ${opts.plugin}: lease not renewed; loops stop calling the plugin if it lapses`, err) });
      for (const stage of stages) {
        await register(nc, { ...pick(opts), plugin: opts.plugin, stage }, { prefix, lease: true });
      }
    }
  } catch (err) {
    await lease?.release(stages).catch(() => undefined);
    await service?.stop();
    if (own) await nc.close();
    throw err;
  }
  info(`hookbus: plugin ${opts.plugin} serving ${stages.join(", ")} on ${nc.getServer()}${opts.register ? " (registered, with a lease)" : ""}`);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") info(`hookbus: plugin ${opts.plugin}: connection to ${nc.getServer()} lost; reconnecting`);
      if (s.type === "reconnect") info(`hookbus: plugin ${opts.plugin}: reconnected to ${nc.getServer()}`);
    }
  })();
  const svc = service;
  const stop = async () => {
    if (lease && !nc.isClosed()) await lease.release(stages).catch((err: Error) => opts.logger?.warn(`hookbus: plugin ${opts.plugin}: lease not released`, err));
    await svc.stop();
    if (own && !nc.isClosed()) await nc.drain();
  };
  return { nc, service: svc, stopped: svc.stopped, stop, stats: () => svc.stats() };
}

function check(plugin: string, stages: string[], handler: unknown): void {
  validateID("plugin", plugin);
  if (!validServiceName(plugin)) {
    throw new HookbusError("invalid", `serve: plugin id ${JSON.stringify(plugin)} cannot be a micro service name (letters, digits, '-' and '_' only)`);
  }
  if (stages.length === 0) throw new HookbusError("invalid", `serve plugin ${plugin}: no stages`);
  stages.forEach((st, i) => {
    if (!isInterceptable(st)) throw new HookbusError("invalid", `serve plugin ${plugin}: stage ${JSON.stringify(st)} is not an interceptable hookbus stage`);
    if (stages.indexOf(st) !== i) throw new HookbusError("invalid", `serve plugin ${plugin}: stage ${st} listed twice`);
  });
  if (typeof handler !== "function") throw new HookbusError("invalid", `serve plugin ${plugin}: no handler`);
}

/** pick returns the registration fields of opts. */
function pick(o: Omit<RegistrationInput, "plugin" | "stage">): Omit<RegistrationInput, "plugin" | "stage"> {
  const { order, timeout, policy, mode, tools, kinds, agents } = o;
  return { order, timeout, policy, mode, tools, kinds, agents };
}

async function serve<S extends InterceptableStage>(nc: NatsConnection, prefix: string, stages: S[], opts: InterceptOptions<S>): Promise<Service> {
  const payloads = new Payloads(nc, namesFor(prefix).payloads);
  const service = await new Svcm(nc).add({
    name: opts.plugin,
    version: opts.version ?? "0.0.0",
    description: opts.description ?? "",
    metadata: { ...opts.metadata, "hookbus.protocol": PROTOCOL_VERSION, "hookbus.prefix": prefix },
    queue: opts.plugin,
  });
  for (const stage of stages) {
    service.addEndpoint(endpointName(stage), {
      subject: hookSubject(prefix, stage, opts.plugin),
      queue: opts.plugin,
      metadata: { "hookbus.stage": stage },
      handler: (err, msg) => {
        if (err) return;
        void handle(nc, payloads, opts, stage, msg);
      },
    });
  }
  await nc.flush();
  // The server refuses a subscription asynchronously, but before it answers
  // the flush: a refusal stops the service (a required subscription failed).
  await new Promise((r) => setImmediate(r));
  if (service.isStopped) {
    const why = await service.stopped;
    throw new HookbusError("privileged", `serve plugin ${opts.plugin}: the server refused a subscription (a privileged stage needs a privileged user): ${why?.message ?? "stopped"}`, { cause: why });
  }
  return service;
}

async function handle<S extends InterceptableStage>(nc: NatsConnection, payloads: Payloads, opts: InterceptOptions<S>, stage: S, msg: ServiceMsg): Promise<void> {
  const arrived = Date.now();
  const fail = (code: number, desc: string) => replyError(msg, code, desc, opts);
  let deadline: number;
  let decoded: ReturnType<typeof decodeEvent>;
  try {
    deadline = requestDeadline(msg.headers, arrived);
    decoded = decodeEvent(msg.headers, msg.data, stage);
  } catch (err) {
    return fail(400, "malformed request: " + messageOf(err));
  }
  if (deadline <= arrived) {
    return fail(504, `deadline ${new Date(deadline).toISOString()} passed before the request was handled (a request without ${HEADER_TIMEOUT_MS})`);
  }
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error(`deadline ${new Date(deadline).toISOString()} passed`)), deadline - arrived);
  try {
    let data = decoded.data;
    if (data === undefined && decoded.event.dataref) {
      try {
        data = await payloads.fetch(decoded.event.dataref, ctl.signal);
      } catch (err) {
        if (err instanceof Gone) return fail(400, "malformed request: " + err.message);
        if (ctl.signal.aborted) return fail(504, "deadline passed fetching the request's data: " + messageOf(err));
        return fail(500, "cannot fetch the request's data: " + messageOf(err));
      }
    }
    const req = {
      stage, plugin: opts.plugin, data, event: decoded.event, deadline: new Date(deadline), signal: ctl.signal,
      traceparent: traceparentOf(msg.headers), headers: msg.headers,
    } as unknown as InterceptRequest<S>;
    let answer: Answer<S>;
    try {
      answer = await Promise.race([Promise.resolve().then(() => opts.handler(req)), aborted(ctl.signal)]);
    } catch (err) {
      if (ctl.signal.aborted) return fail(504, `the handler did not answer within the deadline (${deadline - arrived} ms)`);
      opts.logger?.warn(`hookbus: plugin ${opts.plugin} on ${stage}: handler failed`, err);
      return fail(500, messageOf(err));
    }
    if (bareAllow(answer)) return respond(msg, undefined, opts);
    let body: string;
    try {
      body = JSON.stringify(answer);
    } catch (err) {
      return fail(500, "cannot encode the decision: " + messageOf(err));
    }
    const bytes = new TextEncoder().encode(body);
    const limit = nc.info?.max_payload ?? 0;
    if (limit > 0 && bytes.length > limit) {
      return fail(500, `the decision is ${bytes.length} bytes, more than a reply may carry (${limit}): modify a large payload with a patch`);
    }
    respond(msg, bytes, opts);
  } finally {
    clearTimeout(timer);
  }
}

function respond(msg: ServiceMsg, body: Uint8Array | undefined, opts: { plugin: string; logger?: InterceptOptions<never>["logger"] }): void {
  if (!msg.respond(body)) opts.logger?.warn(`hookbus: plugin ${opts.plugin}: reply on ${msg.subject} failed`);
}

/** replyError answers a micro error; the description is one line of at most 1 KiB. */
function replyError(msg: ServiceMsg, code: number, desc: string, opts: { plugin: string; logger?: InterceptOptions<never>["logger"] }): void {
  let d = desc.replace(/[\r\n]/g, " ");
  const enc = new TextEncoder().encode(d);
  if (enc.length > MAX_ERROR_TEXT) d = new TextDecoder().decode(enc.slice(0, MAX_ERROR_TEXT)).replace(/\uFFFD$/, "");
  d = d.trim() || "error";
  if (!msg.respondError(code, d)) opts.logger?.warn(`hookbus: plugin ${opts.plugin}: error reply on ${msg.subject} failed`);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
