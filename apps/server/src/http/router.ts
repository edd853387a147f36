import { HttpError } from "./errors.js";

export type Params = Readonly<Record<string, string>>;

export interface RouteRequest {
  readonly request: Request;
  readonly url: URL;
  readonly params: Params;
}

export type Handler = (route: RouteRequest) => Promise<Response>;

interface Route {
  readonly method: string;
  readonly path: string;
  readonly parts: readonly string[];
  readonly handler: Handler;
}

function split(path: string): string[] {
  return path.split("/").filter((p) => p.length > 0);
}

/**
 * A small router: exact segments and `:name` parameters, first match wins. An unknown path is 404;
 * a known path with another method is 405 with an `Allow` header.
 */
export class Router {
  readonly #routes: Route[] = [];

  on(method: string, path: string, handler: Handler): this {
    this.#routes.push({ method, path, parts: split(path), handler });
    return this;
  }

  /** The handler, its parameters, and the route's pattern (`/v1/sessions/:sessionId/turns`: what a log may print). */
  match(method: string, pathname: string): { handler: Handler; params: Params; route: string } {
    let segments: string[];
    try {
      segments = split(pathname).map((s) => decodeURIComponent(s));
    } catch {
      throw new HttpError("bad_request", "the path is not valid percent-encoding");
    }
    const allowed = new Set<string>();
    for (const route of this.#routes) {
      const params = bind(route.parts, segments);
      if (!params) continue;
      if (route.method === method || (method === "HEAD" && route.method === "GET"))
        return { handler: route.handler, params, route: route.path };
      allowed.add(route.method);
    }
    if (allowed.size > 0)
      throw new HttpError("method_not_allowed", `use ${[...allowed].join(", ")} on this path`, {
        headers: { allow: [...allowed].join(", ") },
      });
    throw new HttpError("not_found", "no such route");
  }
}

function bind(
  parts: readonly string[],
  segments: readonly string[],
): Record<string, string> | undefined {
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of parts.entries()) {
    const segment = segments[i] as string;
    if (part.startsWith(":")) params[part.slice(1)] = segment;
    else if (part !== segment) return undefined;
  }
  return params;
}
