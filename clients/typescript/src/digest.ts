/** The SHA-256 of a text's UTF-8, in hex (Web Crypto: Node 20, Deno, Bun and browsers alike). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
