export * from "./client.js";
export * from "./errors.js";
export * from "./types.js";
export * from "./tools.js";
export * from "./capture.js";
export { JsonNumber, parse, stringify, formatInstant, numberFromText } from "./json.js";
export { VERSION } from "./version.js";
