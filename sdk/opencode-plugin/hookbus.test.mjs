// The plugin's hooks against a fake fetch: node --test sdk/opencode-plugin
import { test } from "node:test";
import assert from "node:assert/strict";
import { HookbusPlugin } from "./hookbus.js";

const { settings, client, hooks } = HookbusPlugin;

function fakeFetch(answer, sent) {
  return async (url, init) => {
    sent.push({ url, init, body: JSON.parse(init.body) });
    if (answer instanceof Error) throw answer;
    return { ok: true, status: 200, text: async () => (answer === null ? "" : JSON.stringify(answer)) };
  };
}

function plugin(env, answer, sent, warned = []) {
  return hooks(client(settings(env), fakeFetch(answer, sent), (m) => warned.push(m)), "/project");
}

test("a deny is thrown with the gateway's reason, as Claude Code's PreToolUse", async () => {
  const sent = [];
  const h = plugin({ HOOKBUS_GATEWAY_TOKEN: "t0k" }, { block: "no rm -rf" }, sent);
  await assert.rejects(h["tool.execute.before"]({ tool: "bash", sessionID: "ses_1", callID: "c1" }, { args: { command: "rm -rf x" } }), /no rm -rf/);
  assert.equal(sent[0].url, "http://127.0.0.1:9466/opencode");
  assert.equal(sent[0].init.headers.authorization, "Bearer t0k");
  assert.deepEqual(sent[0].body, { hook_event_name: "PreToolUse", session_id: "ses_1", transcript_path: "", cwd: "/project", tool_name: "bash", tool_use_id: "c1", tool_input: { command: "rm -rf x" } });
});

test("a rewrite replaces the call's arguments in place", async () => {
  const output = { args: { command: "touch a", description: "d" } };
  await plugin({}, { args: { command: "touch b" } }, [])["tool.execute.before"]({ tool: "bash", sessionID: "s", callID: "c" }, output);
  assert.deepEqual(output.args, { command: "touch b" });
});

test("nothing to say: the call proceeds untouched", async () => {
  const output = { args: { command: "ls" } };
  await plugin({}, null, [])["tool.execute.before"]({ tool: "bash", sessionID: "s", callID: "c" }, output);
  assert.deepEqual(output.args, { command: "ls" });
});

test("gateway down: fail blocks, ignore warns and proceeds", async () => {
  const down = new Error("connect ECONNREFUSED");
  await assert.rejects(plugin({ HOOKBUS_POLICY: "fail" }, down, [])["tool.execute.before"]({ tool: "bash", sessionID: "s" }, { args: {} }), /fail closed.*ECONNREFUSED/);
  const warned = [];
  await plugin({}, down, [], warned)["tool.execute.before"]({ tool: "bash", sessionID: "s" }, { args: {} });
  assert.match(warned[0], /proceeds unchecked/);
});

test("tool output gets the gateway's context; session events are posted", async () => {
  const sent = [];
  const h = plugin({ HOOKBUS_GATEWAY_URL: "http://gw/kilo-code" }, { context: "checked" }, sent);
  const output = { title: "t", output: "done", metadata: {} };
  await h["tool.execute.after"]({ tool: "bash", sessionID: "s", callID: "c" }, output);
  assert.equal(output.output, "done\n\nchecked");
  await h.event({ event: { type: "session.created", properties: { info: { id: "ses_9" } } } });
  await h.event({ event: { type: "session.idle", properties: { sessionID: "ses_9" } } });
  await h.event({ event: { type: "message.updated", properties: {} } });
  assert.deepEqual(sent.map((s) => s.body.hook_event_name), ["PostToolUse", "SessionStart", "Stop"]);
  assert.equal(sent[0].url, "http://gw/kilo-code");
});

test("bad settings are refused, named", () => {
  assert.throws(() => settings({ HOOKBUS_POLICY: "maybe" }), /HOOKBUS_POLICY=maybe/);
  assert.throws(() => settings({ HOOKBUS_TIMEOUT_MS: "-1" }), /HOOKBUS_TIMEOUT_MS/);
});
