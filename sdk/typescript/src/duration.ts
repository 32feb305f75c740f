// Go duration strings ("5s", "250ms", "1m30s"): the registry writes a
// registration's timeout as Go's time.Duration.String does.
import { HookbusError } from "./errors.js";

const units: Record<string, number> = { ns: 1, us: 1e3, "µs": 1e3, "μs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** parseGoDuration reads a Go duration string into nanoseconds, as time.ParseDuration does. */
export function parseGoDuration(s: string): number {
  const bad = () => new HookbusError("invalid", `timeout ${JSON.stringify(s)} is not a Go duration ("5s", "250ms")`);
  let rest = s;
  let sign = 1;
  if (rest[0] === "-" || rest[0] === "+") {
    sign = rest[0] === "-" ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") throw bad();
  let total = 0;
  while (rest !== "") {
    const m = /^([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)/.exec(rest);
    if (!m || (m[1] === "" && (m[2] === undefined || m[2] === ""))) throw bad();
    const unit = units[m[3]];
    total += Number(m[1] || "0") * unit + (m[2] ? Math.round(Number("0." + m[2]) * unit) : 0);
    rest = rest.slice(m[0].length);
  }
  return sign * total;
}

/** formatGoDuration writes nanoseconds as time.Duration.String does: "2s", "1.5s", "250ms", "1m0s". */
export function formatGoDuration(ns: number): string {
  if (!Number.isSafeInteger(ns)) throw new HookbusError("invalid", `duration ${ns}ns is not a whole number of nanoseconds`);
  if (ns === 0) return "0s";
  const neg = ns < 0;
  let u = Math.abs(ns);
  let out: string;
  if (u < 1e9) {
    // Less than a second: ns, µs or ms with a fraction.
    if (u < 1e3) out = `${u}ns`;
    else if (u < 1e6) out = frac(u, 3) + "µs";
    else out = frac(u, 6) + "ms";
  } else {
    const secs = frac(u % 60e9, 9) + "s";
    u = Math.floor(u / 60e9);
    if (u === 0) out = secs;
    else {
      const mins = `${u % 60}m`;
      const hours = Math.floor(u / 60);
      out = (hours > 0 ? `${hours}h` : "") + mins + secs;
    }
  }
  return (neg ? "-" : "") + out;
}

/** frac writes v / 10^prec with the fraction's trailing zeros dropped. */
function frac(v: number, prec: number): string {
  const p = 10 ** prec;
  const whole = Math.floor(v / p);
  let f = String(v % p).padStart(prec, "0").replace(/0+$/, "");
  return f === "" ? `${whole}` : `${whole}.${f}`;
}
