// A minimal `useChat` page (React, `@ai-sdk/react`) talking to Alma's host unchanged: the AI SDK's
// own `DefaultChatTransport` posts to `/v1/ui/chat`, and `lastAssistantMessageIsCompleteWithApprovalResponses`
// re-sends the chat once the person answered a tool approval request. No JSX, so no build plugin.
import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from "ai";
import { createElement as h, type ReactNode, useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(location.search);
const transport = new DefaultChatTransport<UIMessage>({
  api: "/v1/ui/chat",
  headers: { authorization: `Bearer ${params.get("token") ?? ""}` },
});

type Respond = (answer: { id: string; approved: boolean }) => void;

function Part(props: { part: UIMessage["parts"][number]; respond: Respond }): ReactNode {
  const { part, respond } = props;
  if (part.type === "text") return h("p", { className: "text" }, part.text);
  if (!isToolUIPart(part)) return null;
  const name = part.type.slice("tool-".length);
  const approval = part.state === "approval-requested" ? part.approval.id : undefined;
  return h(
    "div",
    { className: "tool", "data-tool": name, "data-state": part.state },
    `${name}: ${part.state}`,
    approval &&
      h(
        "button",
        {
          type: "button",
          className: "approve",
          onClick: () => respond({ id: approval, approved: true }),
        },
        "Approve",
      ),
    approval &&
      h(
        "button",
        {
          type: "button",
          className: "deny",
          onClick: () => respond({ id: approval, approved: false }),
        },
        "Deny",
      ),
  );
}

function App(): ReactNode {
  const [text, setText] = useState("");
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: params.get("session") ?? "web-1",
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  return h(
    "main",
    null,
    h(
      "ol",
      { id: "messages" },
      messages.map((m) =>
        h(
          "li",
          { key: m.id, "data-role": m.role },
          m.parts.map((part, i) =>
            h(Part, { key: i, part, respond: (a) => void addToolApprovalResponse(a) }),
          ),
        ),
      ),
    ),
    h(
      "form",
      {
        onSubmit: (event: { preventDefault(): void }) => {
          event.preventDefault();
          void sendMessage({ text });
          setText("");
        },
      },
      h("input", {
        id: "input",
        value: text,
        onChange: (event: { target: { value: string } }) => setText(event.target.value),
      }),
      h("button", { id: "send", type: "submit", disabled: status !== "ready" }, "Send"),
    ),
    h("p", { id: "status" }, status),
    error ? h("p", { id: "error" }, error.message) : null,
  );
}

const root = document.getElementById("root");
if (root) createRoot(root).render(h(App));
