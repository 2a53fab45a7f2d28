// The start-up baseline: a minimal MCP server over stdio with one tool, written the way the SDK's
// documentation does it (McpServer + StdioServerTransport, a zod input schema). It loads what any
// stdio MCP server must load, and nothing else.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod';

const server = new McpServer({ name: 'bench-minimal-server', version: '1.0.0' });
server.registerTool('echo', { description: 'Echo the text back.', inputSchema: { text: z.string() } }, async ({ text }) => ({
  content: [{ type: 'text', text }],
}));
await server.connect(new StdioServerTransport());
