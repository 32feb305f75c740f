// npm's prepare script: builds the SDK (tsc) when it is installed, as a
// dependency, from its directory in a clone of the repository
// (npm install /path/to/hookbus/sdk/typescript). npm links such a
// directory without installing its own dependencies, so they are
// installed here first (npm ci --ignore-scripts, from the committed
// package-lock.json) when they are missing.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL("..", import.meta.url));
const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
if (!existsSync(tsc)) {
  const npm = process.env.npm_execpath;
  const [cmd, args] = npm ? [process.execPath, [npm]] : ["npm", []];
  execFileSync(cmd, [...args, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: dir, stdio: "inherit" });
}
execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: dir, stdio: "inherit" });
