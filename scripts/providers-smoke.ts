// `npm run providers:smoke`: one tiny real request per provider whose key is in the environment.
// Not part of `npm test`; with no key set it sends nothing and says so.
import { doctorCli } from "@alma-harness/providers";

process.exitCode = await doctorCli();
