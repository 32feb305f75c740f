import { deny, intercept } from "@hookbus/sdk";

await intercept({
  plugin: "no-rm-rf",
  stage: "tool.before",
  tools: "Bash|bash",
  register: true,
  handler: ({ data }) => {
    const { command = "" } = (data.call.arguments ?? {}) as { command?: string };
    return /\brm\s+-[a-z]*(r[a-z]*f|f[a-z]*r)/i.test(command) ? deny("rm -rf is not allowed here") : null;
  },
});
