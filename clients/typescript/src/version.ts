/** The SDK's version: it follows the server's (X.Y.Z; between releases 0.0.0-dev.0, as package.json). */
export const VERSION = "0.0.0-dev.0";
