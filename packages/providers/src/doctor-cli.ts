import { formatDoctor, runDoctor } from "./doctor.js";

/**
 * The entry a host calls for `alma doctor` / `npm run providers:smoke`: reads the process
 * environment, prints one line per provider, and resolves to an exit code (1 when a configured
 * provider failed, 0 otherwise, including when everything was skipped).
 */
export async function doctorCli(
  env: Readonly<Record<string, string | undefined>> = process.env,
  print: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<number> {
  const results = await runDoctor(env);
  print(formatDoctor(results));
  if (results.every((r) => r.status === "skipped"))
    print("no provider configured: nothing was sent");
  return results.some((r) => r.status === "failed") ? 1 : 0;
}
