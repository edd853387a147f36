export {
  FakeModelClient,
  type ScriptedCall,
  type ScriptedResponse,
  scriptedError,
  scriptedEvents,
  scriptedHang,
  scriptedReasoning,
  scriptedText,
  scriptedToolCall,
  scriptedTorn,
  scriptedUsage,
  UnexpectedModelCallError,
} from "./fake-model.js";
