// Leases: a registration written with a lease lives while its plugin does
// (docs/PROTOCOL.md, "Leases"), as Go's remote.Registry.Hold keeps it.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/nats-core";
import { HookbusError } from "./errors.js";
import { DEFAULT_PREFIX, checkPrefix, namesFor } from "./protocol.js";
import { bucket } from "./registry.js";
import type { InterceptableStage } from "./schema.js";

/** LEASE_RENEWAL_MS is how often a lease is written again (Go's remote.LeaseRenewal); the bucket forgets one 4 s after its last write. */
export const LEASE_RENEWAL_MS = 1000;

/** Lease is a plugin instance's hold on its leased registrations. */
export interface Lease {
  /** The lease's key in the leases bucket: "<plugin>.<instance>". */
  readonly key: string;
  /** release stops renewing the lease and deletes it; when no other instance of the plugin holds one, it deletes the plugin's leased registrations on stages too. */
  release(stages: readonly InterceptableStage[]): Promise<void>;
}

/**
 * holdLease writes a lease for one instance of plugin and renews it every
 * LEASE_RENEWAL_MS until release. Write it before the leased registrations
 * (register with lease: true), so that a loop never sees them without it.
 * onError is told of renewals that failed.
 */
export async function holdLease(nc: NatsConnection, plugin: string, opts: { prefix?: string; onError?: (err: Error) => void } = {}): Promise<Lease> {
  const names = namesFor(checkPrefix(opts.prefix ?? DEFAULT_PREFIX));
  const leases = await bucket(nc, names.leases);
  const instance = randomUUID().replaceAll("-", "");
  const key = `${plugin}.${instance}`;
  const value = JSON.stringify({ plugin, instance, host: `${hostname()}:${process.pid}`, started: new Date().toISOString() });
  const put = async () => {
    try {
      await leases.put(key, value);
    } catch (err) {
      throw new HookbusError("registry", `put ${key} in key-value bucket ${names.leases}: ${(err as Error).message}`, { cause: err });
    }
  };
  await put();
  const timer = setInterval(() => {
    put().catch((err: Error) => opts.onError?.(err));
  }, LEASE_RENEWAL_MS);
  timer.unref();
  let released: Promise<void> | undefined;
  const release = async (stages: readonly InterceptableStage[]) => {
    clearInterval(timer);
    await leases.delete(key);
    for await (const k of await leases.keys(`${plugin}.*`)) {
      if (k !== key) return; // another instance serves the plugin
    }
    const hooks = await bucket(nc, names.hooks);
    for (const stage of stages) {
      const e = await hooks.get(`${stage}.${plugin}`);
      if (!e || e.operation !== "PUT") continue;
      let leased = false;
      try {
        leased = (JSON.parse(e.string()) as { lease?: boolean }).lease === true;
      } catch {
        leased = false;
      }
      if (!leased) continue; // kept as code since
      try {
        await hooks.delete(`${stage}.${plugin}`, { previousSeq: e.revision });
      } catch {
        // written again since: its writer's
      }
    }
  };
  return {
    key,
    release: (stages) => (released ??= release(stages)),
  };
}
