// `npm start`: the host on 127.0.0.1:8787 (PORT/HOST to change), as `alma serve`.
import { runProcess } from "./cli/process.js";

void runProcess(["serve", ...process.argv.slice(2)]);
