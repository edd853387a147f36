/**
 * `@alma-harness/server`: the reference host. Embedders read it for how a product wires Alma:
 * `createHost` (the example clinic agent over HTTP/SSE), its `Request`/`Response` core and Node
 * adapter, the agent's configuration, the offline demo model and the CLI entry.
 */
export {
  clinicAgent,
  clinicCaps,
  clinicMemory,
  configRevision,
  FRONT_DESK_INTENT,
  SYSTEM_PROMPT,
} from "./agent/agent.js";
export {
  type Appointment,
  CLINICS,
  type Clinic,
  ClinicDesk,
  type Patient,
} from "./agent/clinics.js";
export { clinicTools } from "./agent/tools.js";
export { runCli } from "./cli/main.js";
export { type HostEnv, readEnv } from "./config/env.js";
export { type HostSecrets, loadSecrets } from "./config/secrets.js";
export { createHost, type Host, type HostOptions } from "./host.js";
export { type Handle, createApp } from "./http/app.js";
export { mintToken, verifyTenant } from "./http/auth.js";
export { type ErrorCode, HttpError, STATUS_OF_CODE } from "./http/errors.js";
export { sseFrame } from "./http/sse.js";
export { DEMO_LABEL, DEMO_MODEL, DemoModelClient } from "./models/demo.js";
export { demoSetup, type ModelSetup, selectModels, tierPolicy } from "./models/select.js";
export { nodeListener } from "./node-adapter.js";
export { PermissionDesk, type PendingAsk } from "./permissions.js";
export { openRuntime } from "./runtime.js";
