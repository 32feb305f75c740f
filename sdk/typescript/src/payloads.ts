// The claim check: a request too large for a message carries ce-dataref,
// "<bucket>/<object name>", and no body; its data is an object of the
// payloads object store (docs/PROTOCOL.md, "Large payloads").
import type { NatsConnection } from "@nats-io/nats-core";
import { Objm, type ObjectStore } from "@nats-io/obj";

/** Gone is data that will never be there: answered with error 400. */
export class Gone extends Error {}

/** Payloads fetches claim-checked data from one payloads bucket. */
export class Payloads {
  #nc: NatsConnection;
  #bucket: string;
  #store?: Promise<ObjectStore>;

  constructor(nc: NatsConnection, bucket: string) {
    this.#nc = nc;
    this.#bucket = bucket;
  }

  /**
   * fetch returns the JSON data ref names, read within signal. It throws
   * Gone when the reference is outside the bucket, the object does not
   * exist or is not JSON; other errors may pass (a timeout).
   */
  async fetch(ref: string, signal: AbortSignal): Promise<unknown> {
    const prefix = this.#bucket + "/";
    if (!ref.startsWith(prefix) || ref.length === prefix.length) {
      throw new Gone(`data at ${JSON.stringify(ref)}: not an object of ${this.#bucket}`);
    }
    const name = ref.slice(prefix.length);
    const read = async (): Promise<unknown> => {
      const os = await this.#open();
      const res = await os.get(name);
      if (res === null) throw new Gone(`data at ${JSON.stringify(ref)}: the object is gone (expired or deleted)`);
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of res.data) {
        chunks.push(chunk);
        size += chunk.length;
      }
      const err = await res.error;
      if (err) throw err;
      const buf = new Uint8Array(size);
      let off = 0;
      for (const c of chunks) {
        buf.set(c, off);
        off += c.length;
      }
      try {
        return JSON.parse(new TextDecoder().decode(buf));
      } catch {
        throw new Gone(`data at ${JSON.stringify(ref)}: the object is not JSON`);
      }
    };
    return await Promise.race([read(), aborted(signal)]);
  }

  #open(): Promise<ObjectStore> {
    if (!this.#store) {
      this.#store = new Objm(this.#nc).open(this.#bucket);
      this.#store.catch(() => (this.#store = undefined));
    }
    return this.#store;
  }
}

/** aborted rejects when signal aborts. */
export function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(signal.reason ?? new Error("aborted"));
    if (signal.aborted) fail();
    else signal.addEventListener("abort", fail, { once: true });
  });
}
