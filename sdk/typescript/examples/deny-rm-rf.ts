import { deny, intercept } from "@hookbus/sdk";

await intercept({
  plugin: "no-rm-rf",
  stage: "tool.before",
  kinds: ["shell"],
  register: true,
  handler: ({ data }) => {
    const command = data.call.action?.command ?? "";
    return /\brm\s+-[a-z]*(r[a-z]*f|f[a-z]*r)/i.test(command) ? deny("rm -rf is not allowed here") : null;
  },
});
