// The checks of a registration's matchers (tools, agents), as
// interceptors.compileMatcher makes them.
import { HookbusError } from "./errors.js";
import type { ActionKind } from "./schema.js";

/** The kinds of a tool call's normalized action (docs/ACTIONS.md). */
export const ACTION_KINDS: readonly ActionKind[] = [
  "shell", "file.read", "file.write", "file.edit", "file.search", "web.fetch", "web.search", "mcp", "agent", "other",
];

/**
 * checkKinds checks a kinds matcher: kinds or globs over them, separated by
 * "|"; a plain word that is no kind is refused, as Go refuses it.
 */
export function checkKinds(s: string): void {
  if (s.startsWith(REGEXP_PREFIX)) {
    throw new HookbusError("invalid", `kinds: kinds ${JSON.stringify(s)}: kinds are matched by name or glob, not by regular expression`);
  }
  checkMatcher("kinds", s);
  for (const alt of s === "" ? [] : s.split("|")) {
    if (!/[*?[\\]/.test(alt) && !(ACTION_KINDS as readonly string[]).includes(alt)) {
      throw new HookbusError("invalid", `kinds: ${JSON.stringify(alt)} is not a kind (want one of ${ACTION_KINDS.join(", ")})`);
    }
  }
}

/** The prefix of a matcher that is a regular expression. */
export const REGEXP_PREFIX = "re:";

/**
 * checkMatcher checks a matcher: a glob (path.Match syntax, alternatives
 * separated by "|") or "re:" and a regular expression. Go compiles the
 * expression with RE2; here it must be non-empty and use none of what RE2
 * lacks (lookaround, backreferences). The loop skips, with a warning, an
 * entry whose expression RE2 refuses.
 */
export function checkMatcher(field: string, s: string): void {
  if (s.startsWith(REGEXP_PREFIX)) {
    const expr = s.slice(REGEXP_PREFIX.length);
    if (expr === "") throw new HookbusError("invalid", `${field}: matcher ${JSON.stringify(s)} has an empty regular expression`);
    if (/\(\?<?[=!]|\\[1-9]|\\k</.test(expr)) {
      throw new HookbusError("invalid", `${field}: matcher ${JSON.stringify(s)}: lookaround and backreferences are not RE2 (Go) syntax`);
    }
    return;
  }
  if (s === "") return;
  for (const alt of s.split("|")) {
    if (alt === "") throw new HookbusError("invalid", `${field}: glob ${JSON.stringify(s)} has an empty alternative`);
    if (!validGlob(alt)) throw new HookbusError("invalid", `${field}: glob ${JSON.stringify(s)}: ${JSON.stringify(alt)} is malformed: syntax error in pattern`);
  }
}

/** validGlob reports whether Go's path.Match accepts the pattern. */
function validGlob(pattern: string): boolean {
  const cps = Array.from(pattern);
  let i = 0;
  const esc = (): boolean => {
    // getEsc: a possibly escaped character of a class, not '-' or ']', and more after it.
    if (i >= cps.length || cps[i] === "-" || cps[i] === "]") return false;
    if (cps[i] === "\\") {
      i++;
      if (i >= cps.length) return false;
    }
    if (cps[i] === "\uFFFD") return false;
    i++;
    return i < cps.length;
  };
  while (i < cps.length) {
    const c = cps[i];
    if (c === "*" || c === "?") {
      i++;
    } else if (c === "[") {
      i++;
      if (cps[i] === "^") i++;
      let ranges = 0;
      for (;;) {
        if (cps[i] === "]" && ranges > 0) {
          i++;
          break;
        }
        if (!esc()) return false;
        if (cps[i] === "-") {
          i++;
          if (!esc()) return false;
        }
        ranges++;
      }
    } else if (c === "\\") {
      i++;
      if (i >= cps.length) return false;
      i++;
    } else {
      i++;
    }
  }
  return true;
}
