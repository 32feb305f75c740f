/**
 * hookbus interceptors in TypeScript: serve a policy on an agent loop's hook
 * points over NATS, as Go's bus.Serve does, with the protocol's types
 * generated from its JSON Schemas (docs/schema).
 *
 * ```ts
 * import { intercept, deny } from "@hookbus/sdk";
 * await intercept({ plugin: "no-rm-rf", stage: "tool.before", tools: "Bash", register: true,
 *   handler: ({ data }) => (/rm\s+-rf/.test(JSON.stringify(data.call.arguments)) ? deny("no rm -rf") : null) });
 * ```
 */
export { intercept, type Handler, type InterceptOptions, type Interceptor } from "./intercept.js";
export type { InterceptRequest, RequestOf, EventAttributes } from "./request.js";
export { allow, ask, bareAllow, continueWith, deny, mock, patch, replace, stop, type Answer, type DecisionFor } from "./decision.js";
export { register, registrationValue, unregister, type RegistrationInput, type RegistryOptions } from "./registry.js";
export { holdLease, LEASE_RENEWAL_MS, type Lease } from "./lease.js";
export { HookbusError, isHookbusError, type ErrorKind } from "./errors.js";
export { formatGoDuration, parseGoDuration } from "./duration.js";
export {
  DEFAULT_PREFIX,
  DEFAULT_TIMEOUT_MS,
  HEADER_DEADLINE,
  HEADER_TIMEOUT_MS,
  HEADER_TRACEPARENT,
  MAX_TIMEOUT_MS,
  endpointName,
  hookSubject,
  isInterceptable,
  isStage,
  namesFor,
  validateID,
} from "./protocol.js";
export { INTERCEPTABLE_STAGES, PRIVILEGED_STAGES, STAGES, STAGE_DECISIONS, TOOL_MATCHED_STAGES } from "./stages.js";
export type * from "./schema.js";
export { ACTION_KINDS } from "./match.js";
