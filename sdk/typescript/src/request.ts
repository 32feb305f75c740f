// Reading an interception request: the stage's event in CloudEvents binary
// mode (ce-* headers, the payload as the body), and its deadline.
import type { MsgHdrs } from "@nats-io/nats-core";
import type { CloudEvent, InterceptableStage, StagePayloads } from "./schema.js";
import { DEFAULT_TIMEOUT_MS, HEADER_DEADLINE, HEADER_TIMEOUT_MS, isStage } from "./protocol.js";

/** The event's CloudEvent attributes and hookbus' extensions, as the structured JSON format names them. */
export type EventAttributes = Omit<CloudEvent, "data">;

/**
 * InterceptRequest is what a handler is given: one request of one of the
 * stages it serves. Narrow it on `stage` to get that stage's payload type.
 */
export type InterceptRequest<S extends InterceptableStage = InterceptableStage> = { [K in S]: RequestOf<K> }[S];

/** RequestOf is a request of stage K. */
export interface RequestOf<K extends InterceptableStage> {
  /** The stage the request is for. */
  stage: K;
  /** The plugin being asked. */
  plugin: string;
  /** The payload as the earlier interceptors of the chain left it (fetched from the object store when claim-checked). */
  data: StagePayloads[K];
  /** The event: id (the request's own), source, time, subject (the tool's name on tool stages), agentid, sessionid, runid, step, seq, ... */
  event: EventAttributes;
  /** When the loop stops waiting: answer before it. */
  deadline: Date;
  /** Aborted at the deadline. */
  signal: AbortSignal;
  /** The W3C trace context of this call, when the loop sent one. */
  traceparent?: string;
  /** The request's headers as received. */
  headers: MsgHdrs;
}

/** BadRequest is a request that cannot be read: answered with error 400. */
export class BadRequest extends Error {}

const required = ["specversion", "id", "source", "type", "time", "agentid", "sessionid", "runid", "step", "seq"] as const;
const optional = ["subject", "traceparent", "dataref", "parentagentid", "parentsessionid", "parentrunid", "prevhash", "signer", "signature"] as const;
const ulid = /^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$/;

/** header returns a header's value, its name matched without regard to case; two different values are a bad request. */
function header(h: MsgHdrs | undefined, name: string): string | undefined {
  if (!h) return undefined;
  let found: string | undefined;
  for (const k of h.keys()) {
    if (k.toLowerCase() !== name) continue;
    const v = h.values(k)[0];
    if (found !== undefined && found !== v) throw new BadRequest(`header ${name} is given twice, in different cases, with different values`);
    found = v;
  }
  return found;
}

/** percentDecode undoes the CloudEvents NATS binding's percent-encoding. */
function percentDecode(name: string, v: string): string {
  if (!v.includes("%")) return v;
  try {
    return decodeURIComponent(v);
  } catch {
    throw new BadRequest(`header ${name}: bad percent-encoding ${JSON.stringify(v)}`);
  }
}

/**
 * decodeEvent reads the event of a request made to stage's endpoint. It
 * returns the attributes and the body's JSON (undefined when the body is
 * empty and ce-dataref names the claim-checked data).
 */
export function decodeEvent(h: MsgHdrs | undefined, body: Uint8Array, stage: InterceptableStage): { event: EventAttributes; data: unknown } {
  const contentType = header(h, "content-type");
  if (header(h, "ce-specversion") === undefined && contentType?.startsWith("application/cloudevents+json")) {
    return structured(body, stage);
  }
  const attrs: Record<string, string | number> = {};
  for (const name of [...required, ...optional]) {
    const raw = header(h, "ce-" + name);
    if (raw === undefined) {
      if ((required as readonly string[]).includes(name)) throw new BadRequest(`no ce-${name} header`);
      continue;
    }
    attrs[name] = percentDecode("ce-" + name, raw);
  }
  if (contentType !== undefined) attrs.datacontenttype = contentType;
  const text = new TextDecoder().decode(body);
  let data: unknown;
  if (text.trim() === "") {
    if (attrs.dataref === undefined) throw new BadRequest("empty body and no ce-dataref");
  } else {
    try {
      data = JSON.parse(text);
    } catch {
      throw new BadRequest("the body is not JSON");
    }
  }
  return { event: check(attrs, stage), data };
}

function structured(body: Uint8Array, stage: InterceptableStage): { event: EventAttributes; data: unknown } {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new BadRequest("a structured-mode body that is not JSON");
  }
  const { data, ...attrs } = doc;
  for (const name of required) if (attrs[name] === undefined) throw new BadRequest(`no ${name} attribute`);
  if (data === undefined && attrs.dataref === undefined) throw new BadRequest("no data and no dataref");
  return { event: check(attrs as Record<string, string | number>, stage), data };
}

/** check holds the attributes to events.Event.Validate's rules and types step and seq. */
function check(a: Record<string, string | number>, stage: InterceptableStage): EventAttributes {
  if (a.specversion !== "1.0") throw new BadRequest(`ce-specversion ${JSON.stringify(a.specversion)} (want 1.0)`);
  if (!ulid.test(String(a.id))) throw new BadRequest(`event id ${JSON.stringify(a.id)} is not a ULID`);
  const type = String(a.type);
  const st = type.startsWith("hookbus.") ? type.slice("hookbus.".length) : "";
  if (!isStage(st)) throw new BadRequest(`unknown type ${JSON.stringify(type)}`);
  if (st !== stage) throw new BadRequest(`a ${st} event sent to the ${stage} endpoint`);
  if (a.datacontenttype !== undefined && a.datacontenttype !== "application/json") {
    throw new BadRequest(`content-type ${JSON.stringify(a.datacontenttype)} (want application/json)`);
  }
  const step = Number(a.step);
  if (!/^[0-9]+$/.test(String(a.step)) || step > 2147483647) throw new BadRequest(`ce-step ${JSON.stringify(a.step)} is not an integer from 0 to 2147483647`);
  if (!/^[0-9]+$/.test(String(a.seq))) throw new BadRequest(`ce-seq ${JSON.stringify(a.seq)} is not an unsigned integer`);
  for (const id of ["agentid", "sessionid", "runid"] as const) {
    if (String(a[id]) === "" || /[.*>\s]/.test(String(a[id]))) throw new BadRequest(`${id} ${JSON.stringify(a[id])} is not a valid id`);
  }
  const parents = [a.parentagentid, a.parentsessionid, a.parentrunid].filter((v) => v !== undefined).length;
  if (parents !== 0 && parents !== 3) throw new BadRequest("the event names a parent run only in part");
  if (String(a.source) === "") throw new BadRequest("the event has no source");
  return { ...a, step, seq: String(a.seq) } as EventAttributes;
}

/**
 * deadline is when a request's budget ends, as bus.Serve reckons it: its
 * arrival plus Hookbus-Timeout-Ms, so a service whose clock disagrees with
 * the loop's still gets the whole budget; Hookbus-Deadline only when the
 * request carries no budget; arrival plus 5 s when it carries neither.
 */
export function requestDeadline(h: MsgHdrs | undefined, arrived: number): number {
  const dl = header(h, HEADER_DEADLINE.toLowerCase());
  const ms = header(h, HEADER_TIMEOUT_MS.toLowerCase());
  let deadline: number | undefined;
  if (dl !== undefined) {
    deadline = Date.parse(dl);
    if (Number.isNaN(deadline) || !/^\d{4}-\d{2}-\d{2}T/.test(dl)) throw new BadRequest(`header ${HEADER_DEADLINE} ${JSON.stringify(dl)} is not an RFC 3339 time`);
  }
  if (ms !== undefined) {
    const n = Number(ms);
    if (!/^[0-9]+$/.test(ms) || n > 24 * 60 * 60 * 1000) throw new BadRequest(`header ${HEADER_TIMEOUT_MS} ${JSON.stringify(ms)} is not a number of milliseconds`);
    return arrived + n;
  }
  return deadline ?? arrived + DEFAULT_TIMEOUT_MS;
}

/** traceparentOf is the request's trace context header, if any. */
export function traceparentOf(h: MsgHdrs | undefined): string | undefined {
  return header(h, "traceparent");
}
