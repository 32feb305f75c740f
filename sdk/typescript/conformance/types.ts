// Compile-time checks of the SDK's types (built by tsconfig.test.json, never
// run): requests narrow on their stage, decisions are those their stage
// accepts.
import { allow, deny, intercept, mock, patch, type DecisionFor, type InterceptRequest } from "@hookbus/sdk";

export function typeChecks(): void {
  const modify: DecisionFor<"tool.after"> = { decision: "modify", patch: [{ op: "replace", path: "/result/content", value: "x" }] };
  // @ts-expect-error tool.after accepts allow and modify, not deny
  const refused: DecisionFor<"tool.after"> = { decision: "deny", reason: "no" };
  // @ts-expect-error no such decision
  const unknown: DecisionFor<"tool.before"> = { decision: "maybe" };

  const one = (req: InterceptRequest<"tool.before" | "stop">) => {
    if (req.stage === "tool.before") {
      const tool: string = req.data.call.name; // ToolBefore
      return tool === "Bash" ? mock("ok") : allow();
    }
    const reason: string = req.data.reason; // Stop
    return reason === "done" ? null : deny("x");
  };

  void intercept({ plugin: "p", stage: ["tool.before", "stop"], handler: one });
  void intercept({ plugin: "p", stage: "tool.after", handler: () => patch({ op: "remove", path: "/context" }) });
  // @ts-expect-error tool.after cannot be denied
  void intercept({ plugin: "p", stage: "tool.after", handler: () => deny("no") });
  // @ts-expect-error run.started is observe-only
  void intercept({ plugin: "p", stage: "run.started", handler: () => null });
  void [modify, refused, unknown];
}
