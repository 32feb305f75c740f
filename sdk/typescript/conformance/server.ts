// The interception conformance suite's TypeScript side: a process that
// serves, with this SDK, the plugins a Go test asks for, so that
// interceptors/interceptorstest holds the SDK to the same cases as Go's
// bus.Serve (sdk/typescript/conformance/conformance_test.go starts it).
//
// Control requests (JSON) on conformance.<verb>:
//   serve      {plugin, stages, prefix?, handler?, register?}  serve a plugin (register: with its registrations, leased); handler "bridge" (the default) asks the
//              Go test for each decision on conformance.call.<plugin>, so the suite's own Go interceptor decides
//              while this SDK does everything else; "allow" allows at once (round-trip figures)
//   stop       {plugin, stages}                     stop it
//   register   {registration, prefix?}              register(...)
//   unregister {stage, plugin, prefix?}             unregister(...)
// Each is answered {"ok":true} or {"error":"...","kind":"..."}.
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { intercept, isHookbusError, register, unregister, type InterceptableStage, type Interceptor, type RegistrationInput } from "@hookbus/sdk";

const url = process.argv[2] ?? process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const user = process.env.CONFORMANCE_USER;
const nc: NatsConnection = await connect({ servers: url, name: "hookbus-conformance-ts", ...(user ? { user, pass: process.env.CONFORMANCE_PASS } : {}) });
const served = new Map<string, Interceptor>();
const enc = new TextEncoder();

type Control = {
  plugin?: string;
  stages?: InterceptableStage[];
  stage?: InterceptableStage;
  prefix?: string;
  handler?: "bridge" | "allow";
  registration?: RegistrationInput;
  register?: boolean;
  /** Serve on a connection of its own, as this user (intercept connects, and closes it on stop). */
  user?: string;
  pass?: string;
};

const key = (req: Control) => `${req.plugin} ${req.stages?.join(" ")}`;

async function control(verb: string, req: Control): Promise<void> {
  switch (verb) {
    case "serve": {
      const plugin = req.plugin!;
      const svc = await intercept({
        ...(req.user ? { connect: { servers: url, user: req.user, pass: req.pass } } : { nc }),
        plugin,
        stage: req.stages!,
        prefix: req.prefix,
        register: req.register,
        handler: req.handler === "allow" ? () => null : async (r) => {
          // The Go side rebuilds the event from what this SDK decoded, and answers.
          const reply = await nc.request(
            `conformance.call.${plugin}.${r.stage.replaceAll(".", "_")}`,
            enc.encode(JSON.stringify({ stage: r.stage, event: { ...r.event, data: r.data }, deadline: r.deadline.toISOString() })),
            { timeout: Math.max(1, r.deadline.getTime() - Date.now() + 1000) },
          );
          const out = reply.json<{ decision?: unknown; error?: string }>();
          if (out.error !== undefined) throw new Error(out.error);
          return out.decision as never;
        },
      });
      served.set(key(req), svc);
      return;
    }
    case "stop": {
      await served.get(key(req))?.stop();
      served.delete(key(req));
      return;
    }
    case "register":
      await register(nc, req.registration!, { prefix: req.prefix });
      return;
    case "unregister":
      await unregister(nc, req.stage!, req.plugin!, { prefix: req.prefix });
      return;
    default:
      throw new Error(`unknown verb ${verb}`);
  }
}

const sub = nc.subscribe("conformance.*");
void (async () => {
  for await (const m of sub) {
    const verb = m.subject.slice("conformance.".length);
    control(verb, m.json<Control>()).then(
      () => m.respond(enc.encode(JSON.stringify({ ok: true }))),
      (err: Error) => m.respond(enc.encode(JSON.stringify({ error: err.message, kind: isHookbusError(err) ? err.kind : "" }))),
    );
  }
})();
await nc.flush();
console.log("ready");

const closed = await nc.closed();
if (closed) {
  console.error(closed.message);
  process.exit(1);
}
