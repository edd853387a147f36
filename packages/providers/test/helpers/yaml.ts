/**
 * A small YAML reader for the VCR cassettes in shared/fixtures (block mappings and sequences,
 * plain / single- / double-quoted scalars folded over lines, literal block scalars with chomping,
 * empty flow collections). Not a general YAML parser: enough for recorded HTTP exchanges.
 */
export function parseYaml(source: string): unknown {
  return new Reader(source.replace(/\r\n/g, "\n").split("\n")).document();
}

const KEY = /^('(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^\s'"#\-?][^:#]*?|-[^\s:][^:#]*?):(?: +|$)/;

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

function unquoteKey(key: string): string {
  if (key.startsWith("'")) return key.slice(1, -1).replace(/''/g, "'");
  if (key.startsWith('"')) return JSON.parse(key) as string;
  return key.trim();
}

function scalar(text: string): unknown {
  const t = text.trim();
  if (t === "" || t === "~" || t === "null") return null;
  if (t === "true") return true;
  if (t === "false") return false;
  if (t === "[]") return [];
  if (t === "{}") return {};
  if (/^[-+]?(\d+|\d*\.\d+|\d+\.\d*)([eE][-+]?\d+)?$/.test(t)) return Number(t);
  return t;
}

const ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  '"': '"',
  "\\": "\\",
  "/": "/",
  "0": "\0",
  b: "\b",
  f: "\f",
  e: "\x1b",
  " ": " ",
  _: "\u00a0",
  N: "\u0085",
  L: "\u2028",
  P: "\u2029",
  "\t": "\t",
};

class Reader {
  private i = 0;
  constructor(private readonly lines: string[]) {}

  document(): unknown {
    this.skipBlank();
    return this.i < this.lines.length ? this.blockAt(indentOf(this.line())) : null;
  }

  private line(): string {
    return this.lines[this.i] ?? "";
  }

  private skipBlank(): void {
    while (this.i < this.lines.length) {
      const t = this.line().trim();
      if (t === "" || t.startsWith("#") || t === "---" || t === "...") this.i += 1;
      else break;
    }
  }

  private isSeqLine(line: string): boolean {
    const t = line.trimStart();
    return t === "-" || t.startsWith("- ");
  }

  private blockAt(indent: number): unknown {
    const text = this.line().slice(indent);
    if (this.isSeqLine(this.line())) return this.sequence(indent);
    if (KEY.test(text)) return this.mapping(indent);
    this.i += 1;
    return this.inline(text, indent - 1);
  }

  private sequence(indent: number): unknown[] {
    const out: unknown[] = [];
    for (;;) {
      this.skipBlank();
      if (this.i >= this.lines.length) return out;
      const line = this.line();
      if (indentOf(line) !== indent || !this.isSeqLine(line)) return out;
      const rest = line.slice(indent + 1).replace(/^ /, "");
      if (rest.trim() === "") {
        this.i += 1;
        this.skipBlank();
        out.push(
          this.i < this.lines.length && indentOf(this.line()) > indent
            ? this.blockAt(indentOf(this.line()))
            : null,
        );
        continue;
      }
      this.lines[this.i] = " ".repeat(indent + 2) + rest;
      out.push(this.blockAt(indent + 2));
    }
  }

  private mapping(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (;;) {
      this.skipBlank();
      if (this.i >= this.lines.length) return out;
      const line = this.line();
      if (indentOf(line) !== indent) return out;
      const match = KEY.exec(line.slice(indent));
      if (!match) return out;
      const key = unquoteKey(match[1] ?? "");
      const rest = line.slice(indent + match[0].length);
      this.i += 1;
      if (rest.trim() === "" || rest.trim().startsWith("#")) {
        this.skipBlank();
        const next = this.line();
        const nested =
          this.i < this.lines.length &&
          (indentOf(next) > indent || (indentOf(next) === indent && this.isSeqLine(next)));
        out[key] = nested ? this.blockAt(indentOf(next)) : null;
      } else {
        out[key] = this.inline(rest, indent);
      }
    }
  }

  /** A value that starts on a line already consumed; continuation lines are deeper than `parent`. */
  private inline(rest: string, parent: number): unknown {
    const t = rest.trim();
    if (t.startsWith("|") || t.startsWith(">")) return this.blockScalar(t, parent);
    if (t.startsWith("'")) return this.quoted(t.slice(1), "'");
    if (t.startsWith('"')) return this.quoted(t.slice(1), '"');
    let text = t;
    while (this.i < this.lines.length) {
      const next = this.line();
      if (next.trim() === "") {
        const after = this.lines.slice(this.i).find((l) => l.trim() !== "");
        if (after === undefined || indentOf(after) <= parent) break;
        text += "\n";
        this.i += 1;
        continue;
      }
      if (indentOf(next) <= parent) break;
      text += (text.endsWith("\n") ? "" : " ") + next.trim();
      this.i += 1;
    }
    return scalar(text);
  }

  private blockScalar(header: string, parent: number): string {
    const chomp = header.includes("-") ? "strip" : header.includes("+") ? "keep" : "clip";
    const explicit = /\d/.exec(header);
    const body: string[] = [];
    let contentIndent = explicit ? parent + Number(explicit[0]) : -1;
    while (this.i < this.lines.length) {
      const line = this.line();
      if (line.trim() === "") {
        body.push("");
        this.i += 1;
        continue;
      }
      const ind = indentOf(line);
      if (contentIndent < 0) contentIndent = ind;
      if (ind < contentIndent || ind <= parent) break;
      body.push(line.slice(contentIndent));
      this.i += 1;
    }
    let end = body.length;
    while (end > 0 && body[end - 1] === "") end -= 1;
    const content = body.slice(0, end).join("\n");
    const trailing = body.length - end;
    if (chomp === "strip") return content;
    if (chomp === "clip") return content.length > 0 ? `${content}\n` : "";
    return `${content}\n${"\n".repeat(trailing)}`;
  }

  private quoted(first: string, quote: "'" | '"'): string {
    let out = "";
    let pending = "";
    let line = first;
    for (;;) {
      let escapedBreak = false;
      let j = 0;
      while (j < line.length) {
        const c = line[j] as string;
        if (c === quote) {
          if (quote === "'" && line[j + 1] === "'") {
            out += pending + "'";
            pending = "";
            j += 2;
            continue;
          }
          return out + pending;
        }
        if (quote === '"' && c === "\\") {
          if (j === line.length - 1) {
            escapedBreak = true;
            break;
          }
          const [text, used] = this.escape(line, j + 1);
          out += pending + text;
          pending = "";
          j += 1 + used;
          continue;
        }
        if (c === " " || c === "\t") pending += c;
        else {
          out += pending + c;
          pending = "";
        }
        j += 1;
      }
      if (escapedBreak) out += pending;
      pending = "";
      if (this.i >= this.lines.length) throw new Error("unterminated quoted scalar");
      let empties = 0;
      while (this.i < this.lines.length && this.line().trim() === "") {
        empties += 1;
        this.i += 1;
      }
      line = this.line().trimStart();
      this.i += 1;
      if (!escapedBreak) out += empties > 0 ? "\n".repeat(empties) : " ";
    }
  }

  private escape(line: string, at: number): [string, number] {
    const c = line[at] as string;
    const hex = (n: number): [string, number] => [
      String.fromCodePoint(Number.parseInt(line.slice(at + 1, at + 1 + n), 16)),
      1 + n,
    ];
    if (c === "x") return hex(2);
    if (c === "u") return hex(4);
    if (c === "U") return hex(8);
    const mapped = ESCAPES[c];
    if (mapped === undefined) throw new Error(`unknown escape \\${c}`);
    return [mapped, 1];
  }
}
