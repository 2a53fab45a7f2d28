/**
 * The `schema` of the summary (see summary-schema.ts). Its own module so that `report`, which
 * only prints the summary, does not load zod to build the schemas the MCP tool declares.
 */
export const SUMMARY_SCHEMA_VERSION = 2;
