/**
 * Exact JSON: a number keeps the digits it was written with, both ways.
 *
 * sgam stores a value's numbers as written (`61.50` stays `61.50`,
 * `12345678901234567890` is not rounded to `12345678901234567000`).
 * `JSON.parse` would round both through a double. {@link parse} reads a
 * number as a plain `number` when JavaScript writes that number back with the
 * very same text (`42`, `0.5`, `1.25`), and as a {@link JsonNumber} (which
 * holds the text) otherwise (`61.50`, `1e2`, `-0`, `12345678901234567890`,
 * `0.30000000000000000001`). {@link stringify} writes a JsonNumber as its text
 * and a `bigint` as its digits, so a value read and sent back is unchanged.
 */

const inspectSymbol = Symbol.for("nodejs.util.inspect.custom");

/** A JSON number a double would not give back as written: its text, exactly. */
export class JsonNumber {
  /** The number as it was written. */
  readonly text: string;

  constructor(text: string) {
    if (!NUMBER.test(text)) throw new SyntaxError(`${JSON.stringify(text)} is not a JSON number`);
    this.text = text;
  }

  /** The nearest double (rounded, like JSON.parse would). */
  valueOf(): number {
    return Number(this.text);
  }

  toNumber(): number {
    return Number(this.text);
  }

  /** The exact integer, or an error when the text has a fraction or an exponent. */
  toBigInt(): bigint {
    if (!/^-?\d+$/.test(this.text)) throw new RangeError(`${this.text} is not an integer written without exponent`);
    return BigInt(this.text);
  }

  toString(): string {
    return this.text;
  }

  /** JSON.stringify (the built-in) writes it as a string of its digits: use sgam's {@link stringify} to send it as a number. */
  toJSON(): string {
    return this.text;
  }

  [inspectSymbol](): string {
    return `JsonNumber(${this.text})`;
  }
}

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** A JSON number's text as a value: a number when that is exact, else a JsonNumber. */
export function numberFromText(text: string): number | JsonNumber {
  const n = Number(text);
  if (Number.isFinite(n) && String(n) === text && !Object.is(n, -0)) return n;
  return new JsonNumber(text);
}

/** Read JSON with every number exact (see the module's comment). */
export function parse(text: string): unknown {
  const p = new Parser(text);
  p.ws();
  const v = p.value(0);
  p.ws();
  if (p.i !== text.length) p.fail("unexpected text after the value");
  return v;
}

class Parser {
  i = 0;
  constructor(readonly s: string) {}

  fail(msg: string): never {
    throw new SyntaxError(`JSON at position ${this.i}: ${msg}`);
  }

  ws(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.i++;
      else break;
    }
  }

  value(depth: number): unknown {
    if (depth > 1000) this.fail("nested too deeply");
    const c = this.s[this.i];
    if (c === "{") return this.object(depth);
    if (c === "[") return this.array(depth);
    if (c === '"') return this.string();
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return this.number();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return v;
      }
    }
    return this.fail(c === undefined ? "unexpected end" : `unexpected ${JSON.stringify(c)}`);
  }

  object(depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.i++;
    this.ws();
    if (this.s[this.i] === "}") {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.fail("expected a key");
      const k = this.string();
      this.ws();
      if (this.s[this.i] !== ":") this.fail("expected ':'");
      this.i++;
      this.ws();
      const v = this.value(depth + 1);
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      this.ws();
      const c = this.s[this.i++];
      if (c === "}") return out;
      if (c !== ",") this.fail("expected ',' or '}'");
    }
  }

  array(depth: number): unknown[] {
    const out: unknown[] = [];
    this.i++;
    this.ws();
    if (this.s[this.i] === "]") {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      out.push(this.value(depth + 1));
      this.ws();
      const c = this.s[this.i++];
      if (c === "]") return out;
      if (c !== ",") this.fail("expected ',' or ']'");
    }
  }

  string(): string {
    const start = this.i;
    this.i++;
    const s = this.s;
    let escaped = false;
    while (this.i < s.length) {
      const c = s[this.i];
      if (c === "\\") {
        escaped = true;
        this.i += 2;
        continue;
      }
      if (c === '"') {
        this.i++;
        const raw = s.slice(start, this.i);
        return escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
      }
      if (c < " ") this.fail("control character in a string");
      this.i++;
    }
    return this.fail("unterminated string");
  }

  number(): number | JsonNumber {
    const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    m.lastIndex = this.i;
    const r = m.exec(this.s);
    if (!r) this.fail("malformed number");
    this.i += r[0].length;
    return numberFromText(r[0]);
  }
}

/**
 * Write a value as compact JSON, numbers exactly: a {@link JsonNumber} as its
 * text, a `bigint` as its digits, a finite `number` as JavaScript writes it, a
 * `Date` as an RFC 3339 instant. Non-finite numbers are refused.
 */
export function stringify(value: unknown): string {
  const out: string[] = [];
  write(value, out, 0);
  return out.join("");
}

function write(v: unknown, out: string[], depth: number): void {
  if (depth > 512) throw new RangeError("value is nested too deeply");
  if (v === null || v === undefined) out.push("null");
  else if (typeof v === "boolean") out.push(v ? "true" : "false");
  else if (typeof v === "string") out.push(JSON.stringify(v));
  else if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new RangeError(`${v} is not a finite number: JSON cannot hold it`);
    out.push(Object.is(v, -0) ? "-0" : String(v));
  } else if (typeof v === "bigint") out.push(v.toString());
  else if (v instanceof JsonNumber) out.push(v.text);
  else if (v instanceof Date) out.push(JSON.stringify(formatInstant(v)));
  else if (Array.isArray(v)) {
    out.push("[");
    v.forEach((item, i) => {
      if (i) out.push(",");
      write(item, out, depth + 1);
    });
    out.push("]");
  } else if (typeof v === "object") {
    out.push("{");
    let first = true;
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      if (item === undefined) continue;
      if (!first) out.push(",");
      first = false;
      out.push(JSON.stringify(k), ":");
      write(item, out, depth + 1);
    }
    out.push("}");
  } else throw new TypeError(`${typeof v} is not a JSON value`);
}

/** An instant as the API takes it: a string is passed on (the server checks it), a Date as RFC 3339 UTC. */
export function formatInstant(t: Date | string): string {
  if (typeof t === "string") return t;
  if (!(t instanceof Date) || Number.isNaN(t.getTime())) throw new TypeError("an instant is a valid Date or an RFC 3339 string");
  return t.toISOString().replace(/\.000Z$/, "Z");
}
