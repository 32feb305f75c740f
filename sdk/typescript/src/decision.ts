// Decisions: the reply of an interceptor (docs/schema/decision.schema.json).
import type { Decision as WireDecision, InterceptableStage, MockResult, PatchOp, StageDecisions } from "./schema.js";

/**
 * DecisionFor is a decision stage S accepts: on tool.before, allow, modify,
 * deny, mock, stop or ask; on tool.after, allow or modify; and so on
 * (StageDecisions).
 */
export type DecisionFor<S extends InterceptableStage> = Omit<WireDecision, "decision" | "data"> & {
  decision: StageDecisions[S];
  /** modify: the whole replacement payload; mock: the tool result ({content, is_error}). */
  data?: Record<string, unknown> | MockResult | null;
};

/** Answer is what a handler may return: a decision, or nothing (allow). */
export type Answer<S extends InterceptableStage> = DecisionFor<S> | null | undefined | void;

/** allow lets the event go on; on tool.after, context is added for the model after the result. */
export function allow(context?: string): { decision: "allow"; context?: string } {
  return context ? { decision: "allow", context } : { decision: "allow" };
}

/** deny refuses the event; on tool.before the reason goes back to the model as the tool's result. */
export function deny(reason: string): { decision: "deny"; reason: string } {
  return { decision: "deny", reason };
}

/** patch modifies the payload with RFC 6902 operations (send a patch, not data, for a large payload). */
export function patch(...ops: PatchOp[]): { decision: "modify"; patch: PatchOp[] } {
  return { decision: "modify", patch: ops };
}

/** replace modifies the payload: data is the whole new payload. */
export function replace(data: Record<string, unknown>): { decision: "modify"; data: Record<string, unknown> } {
  return { decision: "modify", data };
}

/** mock gives the tool's result without running it (tool.before). */
export function mock(content: string, isError = false): { decision: "mock"; data: MockResult } {
  return { decision: "mock", data: isError ? { content, is_error: true } : { content } };
}

/** ask pauses the run for a human to approve the tool call (tool.before). */
export function ask(reason: string): { decision: "ask"; reason: string } {
  return { decision: "ask", reason };
}

/** stop ends the run. */
export function stop(reason?: string): { decision: "stop"; reason?: string } {
  return reason ? { decision: "stop", reason } : { decision: "stop" };
}

/** continueWith forces another step with message (stop). */
export function continueWith(message: string): { decision: "continue"; context: string } {
  return { decision: "continue", context: message };
}

/** bareAllow reports whether d is an allow with nothing else to say: sent as an empty body. */
export function bareAllow(d: unknown): boolean {
  if (d === null || d === undefined) return true;
  if (typeof d !== "object") return false;
  const o = d as Record<string, unknown>;
  return o.decision === "allow" && Object.keys(o).every((k) => k === "decision" || o[k] === undefined);
}
