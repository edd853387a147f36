import type { ModelRequest, ToolChoice } from "@alma-harness/core";
import type { ChatTool, ChatToolChoice } from "./wire.js";

export function toChatTools(request: ModelRequest): ChatTool[] {
  return request.tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }));
}

export function toChatToolChoice(choice: ToolChoice): ChatToolChoice {
  return choice.type === "tool"
    ? { type: "function", function: { name: choice.name } }
    : choice.type;
}
