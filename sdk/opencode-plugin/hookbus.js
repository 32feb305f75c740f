// hookbus plugin for OpenCode and Kilo Code: every hook of a session goes to
// `loop gateway` over one kept-alive HTTP connection, is recorded on the bus
// and decided by its interceptors. A deny is thrown: OpenCode tells the model
// the thrown error's message. Copy this file into .opencode/plugins/ (Kilo
// Code: .kilo/plugins/) or ~/.config/opencode/plugins/. docs/OPENCODE.md.
//
// Settings, from the environment:
//   HOOKBUS_GATEWAY_URL    the gateway's route (default
//                          http://127.0.0.1:9466/opencode; Kilo Code: /kilo-code)
//   HOOKBUS_GATEWAY_TOKEN  the bearer token the gateway takes, if any
//   HOOKBUS_POLICY         ignore (default: the hook proceeds unchecked when the
//                          gateway cannot answer) or fail (tool calls and
//                          prompts are blocked)
//   HOOKBUS_TIMEOUT_MS     the longest wait for one answer (default 30000)

const DEFAULT_URL = "http://127.0.0.1:9466/opencode";

/** settings reads the plugin's settings from env. */
function settings(env = process.env) {
  const policy = env.HOOKBUS_POLICY || "ignore";
  if (policy !== "ignore" && policy !== "fail") {
    throw new Error(`hookbus: HOOKBUS_POLICY=${policy}: give ignore or fail`);
  }
  const timeout = Number(env.HOOKBUS_TIMEOUT_MS || 30000);
  if (!(timeout > 0)) {
    throw new Error(`hookbus: HOOKBUS_TIMEOUT_MS=${env.HOOKBUS_TIMEOUT_MS}: give a positive number of milliseconds`);
  }
  return { url: env.HOOKBUS_GATEWAY_URL || DEFAULT_URL, token: env.HOOKBUS_GATEWAY_TOKEN || "", policy, timeout };
}

/**
 * client posts hook inputs to the gateway and returns its answers
 * ({block, args, context, warnings}; {} for nothing to do). When the gateway
 * cannot answer, policy decides: ignore answers {} with a warning, fail
 * blocks.
 */
function client(s, fetchImpl = globalThis.fetch, warn = (m) => console.error(m)) {
  return async function post(input) {
    const headers = { "content-type": "application/json" };
    if (s.token) headers.authorization = `Bearer ${s.token}`;
    let res, text;
    try {
      res = await fetchImpl(s.url, {
        method: "POST",
        headers,
        body: JSON.stringify(input),
        signal: AbortSignal.timeout(s.timeout),
      });
      text = await res.text();
    } catch (err) {
      return outage(s, input, `the gateway at ${s.url} did not answer: ${err && err.message ? err.message : err}`, warn);
    }
    if (!res.ok) {
      return outage(s, input, `the gateway at ${s.url} answered ${res.status}: ${text.trim()}`, warn);
    }
    const answer = text.trim() === "" ? {} : JSON.parse(text);
    for (const w of answer.warnings || []) warn(`hookbus: ${w}`);
    return answer;
  };
}

function outage(s, input, msg, warn) {
  const blocks = input.hook_event_name === "PreToolUse" || input.hook_event_name === "UserPromptSubmit";
  if (s.policy === "fail" && blocks) {
    return { block: `hookbus is unavailable and its policy is to fail closed: ${msg}` };
  }
  warn(`hookbus: ${msg}; ${input.hook_event_name} proceeds unchecked`);
  return {};
}

/** hooks returns the plugin's hooks posting through post. */
function hooks(post, directory) {
  const base = (event, session) => ({ hook_event_name: event, session_id: session, transcript_path: "", cwd: directory });
  return {
    "chat.message": async (input, output) => {
      const prompt = (output.parts || []).filter((p) => p.type === "text" && !p.synthetic).map((p) => p.text).join("\n");
      const a = await post({ ...base("UserPromptSubmit", input.sessionID), prompt });
      if (a.block) throw new Error(a.block);
    },
    "tool.execute.before": async (input, output) => {
      const a = await post({ ...base("PreToolUse", input.sessionID), tool_name: input.tool, tool_use_id: input.callID, tool_input: output.args || {} });
      if (a.block) throw new Error(a.block);
      if (a.args && typeof a.args === "object") {
        for (const k of Object.keys(output.args)) delete output.args[k];
        Object.assign(output.args, a.args);
      }
    },
    "tool.execute.after": async (input, output) => {
      const a = await post({
        ...base("PostToolUse", input.sessionID),
        tool_name: input.tool,
        tool_use_id: input.callID,
        tool_input: input.args || {},
        tool_response: { title: output.title, output: output.output, metadata: output.metadata },
      });
      if (a.context && typeof output.output === "string") output.output += `\n\n${a.context}`;
    },
    event: async ({ event }) => {
      const p = event.properties || {};
      switch (event.type) {
        case "session.created":
          if (p.info && !p.info.parentID) await post({ ...base("SessionStart", p.info.id), source: "startup" });
          break;
        case "session.idle":
          await post({ ...base("Stop", p.sessionID), stop_hook_active: false });
          break;
        case "session.error":
          if (p.sessionID) await post({ ...base("StopFailure", p.sessionID), error: JSON.stringify(p.error || {}) });
          break;
        case "session.deleted":
          if (p.info) await post({ ...base("SessionEnd", p.info.id), reason: "other" });
          break;
      }
    },
  };
}

/**
 * HookbusPlugin is the plugin OpenCode and Kilo Code load. It is this
 * module's only export: OpenCode calls every export as a plugin. Its parts
 * are its properties, for tests.
 */
export const HookbusPlugin = async ({ directory }) => hooks(client(settings()), directory);
HookbusPlugin.settings = settings;
HookbusPlugin.client = client;
HookbusPlugin.hooks = hooks;
